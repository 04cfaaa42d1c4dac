//! Reading an instance's commands: newest first, by status, in pages.

use super::*;

#[tokio::test]
async fn an_instances_commands_list_newest_first_by_status_and_page() {
    let db = Db::new().await;
    let now = now();
    let mut ids = Vec::new();
    for i in 0..5 {
        let at = later(now, i);
        let c = db
            .insert(
                &send("549", &format!("m{i}"), at),
                Some(&format!("k{i}")),
                at,
            )
            .await
            .unwrap()
            .command;
        ids.push(c.id);
    }
    let mut tx = db.pool.begin().await.unwrap();
    commands::cancel(&mut tx, db.app, ids[1], now)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let page = |statuses: Vec<CommandStatus>, offset, limit| commands::ListFilter {
        app: db.app,
        instance: db.instance,
        statuses,
        offset,
        limit,
    };
    let listed = |v: Vec<Command>| v.into_iter().map(|c| c.id).collect::<Vec<_>>();
    let all = commands::list(&db.pool, &page(vec![], 0, 10))
        .await
        .unwrap();
    assert_eq!(listed(all), [ids[4], ids[3], ids[2], ids[1], ids[0]]);
    let second = commands::list(&db.pool, &page(vec![], 2, 2)).await.unwrap();
    assert_eq!(listed(second), [ids[2], ids[1]]);
    let queued = commands::list(&db.pool, &page(vec![CommandStatus::Queued], 0, 10))
        .await
        .unwrap();
    assert_eq!(listed(queued), [ids[4], ids[3], ids[2], ids[0]]);
    let mixed = vec![CommandStatus::Cancelled, CommandStatus::Failed];
    let cancelled = commands::list(&db.pool, &page(mixed, 0, 10)).await.unwrap();
    assert_eq!(listed(cancelled), [ids[1]]);
    let mut other = page(vec![], 0, 10);
    other.app = AppId::new();
    assert!(commands::list(&db.pool, &other).await.unwrap().is_empty());
    db.drop_it().await;
}
