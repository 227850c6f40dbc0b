// The tls option against a fake VerifierService served by grpc-js over mutual TLS, with
// throwaway certificates made by the openssl command (skipped where it is missing).
'use strict';

const { describe, before, after, test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const grpc = require('@grpc/grpc-js');

const { createEdge, loadHookverify } = require('../edge.js');
const h = require('./helpers.js');


describe('edge over TLS (fake VerifierService, mutual TLS)', { timeout: 60000, skip: !h.haveOpenssl && 'no openssl command to make certificates' }, () => {
  let tmp;
  let grpcServer;
  let addr;
  let files;
  const calls = [];
  const edges = [];

  const selfSigned = (name, subject, san) => h.selfSigned(tmp.dir, name, subject, san);

  before(async () => {
    tmp = h.mkTmp();
    files = {
      server: selfSigned('server', '/CN=hookverify-test', 'IP:127.0.0.1,DNS:localhost'),
      client: selfSigned('client', '/CN=edge-1/O=Acme', 'DNS:edge-1'),
    };
    const hookverify = loadHookverify();
    grpcServer = new grpc.Server();
    grpcServer.addService(hookverify.VerifierService.service, {
      Verify(call, callback) {
        calls.push({ authorization: call.metadata.get('authorization') });
        callback(null, { verdict: 'VERDICT_ACCEPTED', reply: { status: 200, body: Buffer.from('{"status":"accepted"}') } });
      },
    });
    const creds = grpc.ServerCredentials.createSsl(
      fs.readFileSync(files.client.cert), // the CA of client certificates
      [{ private_key: fs.readFileSync(files.server.key), cert_chain: fs.readFileSync(files.server.cert) }],
      true, // a client certificate is required
    );
    addr = await h.bindLoopback(grpcServer, { host: 'localhost', creds });
  });

  after(async () => {
    for (const edge of edges) await h.closeServer(edge);
    if (grpcServer) grpcServer.forceShutdown();
    if (tmp) tmp.cleanup();
  });

  const edgeWith = async (opts) => {
    const edge = createEdge({ verifierAddr: addr, deadlineMs: 3000, retryAfterSeconds: 5, log: () => {}, token: null, ...opts });
    edges.push(edge);
    return h.listen(edge);
  };
  const deliver = (url) => h.request(`${url}/hooks/ep`, { body: Buffer.from('{}') });

  test('tls given as file paths, with a client certificate and a token: accepted, the token sent', async () => {
    const url = await edgeWith({
      tls: { ca: files.server.cert, cert: files.client.cert, key: files.client.key },
      token: 'hvt_over_tls',
    });
    const res = await deliver(url);
    assert.equal(res.status, 200, res.body.toString());
    assert.deepEqual(calls.at(-1).authorization, ['Bearer hvt_over_tls']);
  });

  test('tls given as Buffers', async () => {
    const url = await edgeWith({
      tls: { ca: fs.readFileSync(files.server.cert), cert: fs.readFileSync(files.client.cert), key: fs.readFileSync(files.client.key) },
    });
    assert.equal((await deliver(url)).status, 200);
  });

  for (const [name, tls] of [
    ['plaintext to a TLS server', undefined],
    ['no client certificate where one is required', () => ({ ca: files.server.cert })],
    ['the server certificate not signed by the given CA', () => ({ ca: files.client.cert, cert: files.client.cert, key: files.client.key })],
  ]) {
    test(`${name}: the call fails and the provider gets 503 (retry later)`, async () => {
      const url = await edgeWith({ tls: typeof tls === 'function' ? tls() : tls });
      const res = await deliver(url);
      assert.equal(res.status, 503);
      assert.equal(res.headers['retry-after'], '5');
    });
  }

  test('a client certificate without its key, or an unreadable file, is refused at creation', () => {
    assert.throws(() => createEdge({ verifierAddr: addr, tls: { cert: files.client.cert } }), /tls\.cert and tls\.key go together/);
    assert.throws(() => createEdge({ verifierAddr: addr, tls: { ca: path.join(tmp.dir, 'missing.pem') } }), /tls\.ca: .*ENOENT/);
    assert.throws(() => createEdge({ verifierAddr: addr, tls: { ca: 42 } }), /tls\.ca must be a Buffer or a file path/);
  });
});
