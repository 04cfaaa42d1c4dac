// Signature interop: Motor signs and POSTs real deliveries of every
// profile (mw-v1, t-v1, standard-webhooks) to a Node receiver on loopback
// that verifies them with this SDK, before and across a rotation; the same
// deliveries tampered, stale or with a repeated header are refused, both
// offline and when sent to the receiver again.
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, describe, it } from 'node:test';

import { Verifier, WebhookVerificationError, type SecretInput, type SigningProfile, type Subscription } from '../src/index.js';
import { header, motor, newInstance, Receiver, waitFor, type Received } from './support.js';

const PROFILES: SigningProfile[] = ['mw-v1', 't-v1', 'standard-webhooks'];
/** The header each profile signs with, and the one carrying its timestamp. */
const SIGNATURE: Record<SigningProfile, string> = { 'mw-v1': 'x-mw-signature', 't-v1': 'x-mw-signature', 'standard-webhooks': 'webhook-signature' };

interface Setup {
  subscription: Subscription;
  secrets: { value: string; keyId: string }[];
  verifier: Verifier<SigningProfile>;
}

/** Sends a recorded request to the receiver again, with `headers` as given (arrays repeat a header). */
function resend(url: string, headers: Record<string, string | string[]>, body: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end(body);
  });
}

function headersOf(received: Received): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (let i = 0; i + 1 < received.rawHeaders.length; i += 2) {
    const name = received.rawHeaders[i]!.toLowerCase();
    if (name === 'host' || name === 'content-length' || name === 'connection') continue;
    out[name] = received.rawHeaders[i + 1]!;
  }
  return out;
}

function refusedWith(fn: () => unknown, reason: string, status: number): void {
  assert.throws(fn, (e: unknown) => e instanceof WebhookVerificationError && e.reason === reason && e.status === status);
}

describe('signature interop with real deliveries', () => {
  const client = motor();
  let receiver: Receiver;
  let instance: string;
  const setups = new Map<SigningProfile, Setup>();

  before(async () => {
    receiver = await Receiver.start();
    instance = await newInstance('sdk-ts-interop');
    for (const profile of PROFILES) {
      const { suscripcion, secreto } = await client.subscriptions.create({
        nombre: `interop ${profile}`,
        url: `${receiver.url}/${profile}`,
        firma: profile,
        instancias: [instance],
        tipos: [`interop.${profile}`],
      });
      const secrets = [{ value: secreto.valor, keyId: secreto.key_id }];
      const setup: Setup = { subscription: suscripcion, secrets, verifier: new Verifier({ profile, secrets }) };
      setups.set(profile, setup);
      // The receiver answers what the SDK decides: 204, 401, 408 or 400.
      receiver.route(`/${profile}`, (req, body) => {
        try {
          setup.verifier.verify(req, body);
          return 204;
        } catch (error) {
          if (error instanceof WebhookVerificationError) return error.status;
          throw error;
        }
      });
    }
  });
  after(() => receiver.close());

  const delivered = (profile: SigningProfile, count: number) =>
    waitFor(`${count} verified ${profile} deliveries`, () => {
      const got = receiver.at(`/${profile}`);
      const bad = got.find((r) => r.status !== 204);
      if (bad) throw new Error(`the receiver answered ${bad.status} to a real ${profile} delivery`);
      return got.length >= count ? got : undefined;
    });

  it('verifies a real delivery of every profile and gives the ledger envelope', async () => {
    for (const profile of PROFILES) await client.events.append(instance, { type: `interop.${profile}`, data: { profile } });
    const ledger = (await client.events.list(instance)).events;
    for (const profile of PROFILES) {
      const [request] = await delivered(profile, 1);
      const { envelope, verified } = setups.get(profile)!.verifier.verify({ rawHeaders: request!.rawHeaders }, request!.body);
      assert.deepEqual(envelope, ledger.find((e) => e.type === `interop.${profile}`));
      assert.equal(verified.profile, profile);
      assert.equal(header(request!, 'x-mw-event-id'), envelope.event_id);
      if (profile !== 't-v1') assert.equal(verified.deliveryId, header(request!, 'x-mw-delivery-id'));
      if (profile === 'mw-v1') assert.equal(verified.keyId, setups.get(profile)!.secrets[0]!.keyId);
    }
  });

  it('verifies deliveries signed during a rotation with the old secret, the new one or both', async () => {
    for (const profile of PROFILES) {
      const setup = setups.get(profile)!;
      const { secreto } = await client.subscriptions.rotate(setup.subscription.id);
      setup.secrets.unshift({ value: secreto.valor, keyId: secreto.key_id });
      // The receiver still holds only the old secret: the old signature
      // beside the new one must be enough.
    }
    for (const profile of PROFILES) await client.events.append(instance, { type: `interop.${profile}`, data: { rotated: true } });
    for (const profile of PROFILES) {
      const setup = setups.get(profile)!;
      const request = (await delivered(profile, 2))[1]!;
      const [fresh, old] = setup.secrets as [{ value: string; keyId: string }, { value: string; keyId: string }];
      const signature = header(request, SIGNATURE[profile])!;
      assert.equal((signature.match(/v1[=,]/g) ?? []).length, 2, `two signatures in ${signature}`);
      const check = (secrets: SecretInput[]) => new Verifier({ profile, secrets }).verify({ rawHeaders: request.rawHeaders }, request.body).verified;
      assert.ok(check([old.value]));
      assert.ok(check([fresh.value]));
      assert.ok(check([fresh, old]));
      refusedWith(() => check(['whsec_' + '0'.repeat(64)]), 'bad_signature', 401);
      if (profile === 'mw-v1') {
        assert.equal(header(request, 'x-mw-key-id'), `${fresh.keyId},${old.keyId}`, 'newest first');
        assert.equal(check([fresh]).keyId, fresh.keyId);
        assert.equal(check([old]).keyId, old.keyId);
        // A secret named for a key id answers only for that one.
        refusedWith(() => check([{ value: old.value, keyId: fresh.keyId }]), 'bad_signature', 401);
      }
      // Motor's test request is signed the same way.
      setup.verifier = new Verifier({ profile, secrets: [fresh] });
      const test = await client.subscriptions.test(setup.subscription.id);
      assert.equal(test.status, 204, `${profile} test: ${JSON.stringify(test)}`);
    }
  });

  it('refuses real deliveries tampered, stale or with a repeated header, offline and on the wire', async () => {
    for (const profile of PROFILES) {
      const setup = setups.get(profile)!;
      const request = (await delivered(profile, 2))[1]!;
      const verifier = new Verifier({ profile, secrets: setup.secrets });
      const raw = { rawHeaders: request.rawHeaders };
      const timestamp = verifier.verify(raw, request.body).verified.timestamp;

      const tampered = Buffer.from(request.body);
      tampered[tampered.length - 2] = tampered[tampered.length - 2]! ^ 1;
      refusedWith(() => verifier.verify(raw, tampered), 'bad_signature', 401);
      refusedWith(() => verifier.verify(raw, request.body, timestamp + 301), 'stale', 408);
      refusedWith(() => verifier.verify(raw, request.body, timestamp - 301), 'stale', 408);
      assert.ok(verifier.verify(raw, request.body, timestamp + 300));
      const sig = header(request, SIGNATURE[profile])!;
      refusedWith(() => verifier.verify({ rawHeaders: [...request.rawHeaders, SIGNATURE[profile], sig] }, request.body), 'repeated_header', 401);

      // The same, sent to the receiver: it answers what Motor must see.
      const url = `${receiver.url}/${profile}`;
      const headers = headersOf(request);
      assert.equal(await resend(url, headers, request.body), 204, 'the untouched copy verifies');
      assert.equal(await resend(url, headers, tampered), 401);
      assert.equal(await resend(url, { ...headers, [SIGNATURE[profile]]: [sig, sig] }, request.body), 401);
      const stale = String(timestamp - 400);
      const staleHeaders =
        profile === 'mw-v1'
          ? { ...headers, 'x-mw-timestamp': stale }
          : profile === 'standard-webhooks'
            ? { ...headers, 'webhook-timestamp': stale }
            : { ...headers, 'x-mw-signature': sig.replace(/t=\d+/, `t=${stale}`) };
      assert.equal(await resend(url, staleHeaders, request.body), 408);
    }
    // Motor's deliveries all ended entregada: nothing was refused by mistake.
    for (const profile of PROFILES) {
      const page = await client.deliveries.list({ subscriptionId: setups.get(profile)!.subscription.id });
      assert.deepEqual(page.entregas.map((d) => d.estado), ['entregada', 'entregada']);
    }
  });
});
