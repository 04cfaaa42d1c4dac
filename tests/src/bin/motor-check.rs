//! `motor-check DIR…`: judges the history in each directory (its
//! `history.jsonl` and `dump.jsonl`), prints a report per history and a
//! summary table, and exits non-zero on any violation (2 when a history
//! cannot be read).

use std::{path::PathBuf, process::ExitCode};

use motor_system_tests::{
    check::{check, Invariant, Report},
    history::History,
    scenarios,
};

fn main() -> ExitCode {
    let dirs: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    if dirs.is_empty() {
        eprintln!("usage: motor-check HISTORY_DIR...");
        return ExitCode::from(2);
    }
    let mut reports: Vec<Report> = Vec::new();
    let mut unreadable = Vec::new();
    for dir in &dirs {
        match History::read(dir).and_then(|h| check(&h)) {
            Ok(report) => {
                println!("{}: {report}", dir.display());
                reports.push(report);
            }
            Err(e) => {
                eprintln!("{}: unreadable history: {e}", dir.display());
                unreadable.push(dir.display().to_string());
            }
        }
    }
    print!("{}", summary(&reports));
    for dir in &unreadable {
        println!("{dir}: unreadable (the run did not finish)");
    }
    if !unreadable.is_empty() {
        ExitCode::from(2)
    } else if reports
        .iter()
        .all(|r| r.ok() || scenarios::REPORT_ONLY.contains(&r.scenario.as_str()))
    {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// scenario × invariant.
fn summary(reports: &[Report]) -> String {
    let mut out = format!("{:<28}", "scenario");
    for i in Invariant::ALL {
        out.push_str(&format!(" {:>15}", i.name()));
    }
    out.push('\n');
    for r in reports {
        out.push_str(&format!("{:<28}", r.scenario));
        for i in Invariant::ALL {
            out.push_str(&format!(" {:>15}", r.cell(i)));
        }
        if scenarios::REPORT_ONLY.contains(&r.scenario.as_str()) {
            out.push_str("  (report only: losses expected)");
        }
        out.push('\n');
    }
    out
}
