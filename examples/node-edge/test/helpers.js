// Test helpers: build and run a real hookverify server, run its CLI, talk HTTP to the edge.
// Every wait is bounded so a failure never hangs CI.
'use strict';

const { spawn, execFile, execFileSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const grpc = require('@grpc/grpc-js');

const REPO_ROOT = path.resolve(__dirname, '..', '..', '..');

// Servers still running when this test process exits, however it exits, are killed here, so a
// failed or interrupted run never leaves a hookverify behind.
const spawned = new Set();
process.on('exit', () => {
  for (const proc of spawned) proc.kill('SIGKILL');
});

/** mkTmp makes a temporary directory removed by the returned cleanup function. */
function mkTmp(prefix = 'hookverify-node-edge-') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  return { dir, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/**
 * run runs a command with a timeout, optional stdin and extra environment variables (added to
 * this process's), and resolves {stdout, stderr}.
 */
function run(cmd, args, { cwd, input, env, timeoutMs = 60000 } = {}) {
  return new Promise((resolve, reject) => {
    const options = { cwd, timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 16 << 20, env: { ...process.env, ...env } };
    const child = execFile(cmd, args, options,
      (err, stdout, stderr) => {
        if (err) {
          err.message += `\n${cmd} ${args.join(' ')}\nstdout: ${stdout}\nstderr: ${stderr}`;
          reject(err);
          return;
        }
        resolve({ stdout, stderr });
      });
    if (input !== undefined) child.stdin.end(input);
    else child.stdin.end();
  });
}

/**
 * buildHookverify builds ./cmd/hookverify from the repository root into dir, or returns
 * $HOOKVERIFY_BIN when set (a binary CI already built, e.g. with `make build`).
 */
async function buildHookverify(dir) {
  if (process.env.HOOKVERIFY_BIN) return path.resolve(process.env.HOOKVERIFY_BIN);
  const bin = path.join(dir, 'hookverify');
  await run('go', ['build', '-o', bin, './cmd/hookverify'], { cwd: REPO_ROOT, timeoutMs: 300000 });
  return bin;
}

/**
 * startHookverify spawns `<bin> serve --listen <listen, default 127.0.0.1:0> --data-dir <dataDir>
 * <args...>` with env added to this process's environment (e.g. HOOKVERIFY_BOOTSTRAP_TOKEN),
 * reads the address it bound from its "hookverify serving" log line, and waits until
 * grpc.health.v1 reports SERVING (health stays open with --require-auth).
 * Resolves {proc, addr, httpAddr (with --http-listen), stop (SIGKILL), terminate (SIGTERM, as a
 * rolling deploy sends, then the wait for its drain and exit), logs}.
 */
async function startHookverify(bin, dataDir, { listen = '127.0.0.1:0', args = [], env = {}, timeoutMs = 30000 } = {}) {
  const proc = spawn(bin, ['serve', '--listen', listen, '--data-dir', dataDir, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  spawned.add(proc);
  proc.on('exit', () => spawned.delete(proc));
  const logs = [];
  let exited = null;
  const exitPromise = new Promise((resolve) => proc.on('exit', (code, signal) => {
    exited = { code, signal };
    resolve(exited);
  }));
  const stop = async () => {
    if (exited) return exited;
    proc.kill('SIGKILL');
    return Promise.race([exitPromise, sleep(5000, { unref: true })]);
  };
  const terminate = async () => {
    if (exited) return exited;
    proc.kill('SIGTERM');
    // hookverify drains the calls under way for at most 10 s.
    const done = await Promise.race([exitPromise, sleep(20000, { unref: true })]);
    return done ?? stop();
  };
  let httpAddr = null;

  try {
    const addr = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`hookverify did not report its address within ${timeoutMs} ms:\n${logs.join('')}`)), timeoutMs);
      let buf = '';
      proc.stderr.setEncoding('utf8');
      proc.stderr.on('data', (chunk) => {
        logs.push(chunk);
        buf += chunk;
        let nl;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          try {
            const rec = JSON.parse(line);
            if (rec.msg === 'hookverify serving' && rec.addr) {
              clearTimeout(timer);
              httpAddr = rec.http || null;
              resolve(rec.addr);
            }
          } catch { /* not JSON */ }
        }
      });
      proc.stdout.resume();
      proc.on('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`hookverify exited early (code ${code}, signal ${signal}):\n${logs.join('')}`));
      });
      proc.on('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
    });
    await waitServing(addr, timeoutMs);
    return { proc, addr, httpAddr, stop, terminate, logs };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * waitServing polls grpc.health.v1.Health/Check with a hand-encoded request until the status
 * is SERVING. HealthCheckRequest{service: ""} encodes to zero bytes; a SERVING
 * HealthCheckResponse encodes to 0x08 0x01 (field 1, varint 1).
 */
async function waitServing(addr, timeoutMs) {
  const Health = grpc.makeGenericClientConstructor({
    Check: {
      path: '/grpc.health.v1.Health/Check',
      requestStream: false,
      responseStream: false,
      requestSerialize: () => Buffer.alloc(0),
      requestDeserialize: (b) => b,
      responseSerialize: (b) => b,
      responseDeserialize: (b) => b,
    },
  }, 'Health');
  const client = new Health(addr, grpc.credentials.createInsecure());
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer';
  try {
    while (Date.now() < deadline) {
      const answer = await new Promise((resolve) => {
        client.Check({}, { deadline: Date.now() + 1000 }, (err, buf) => resolve(err ? `error ${err.code}: ${err.details}` : buf));
      });
      if (Buffer.isBuffer(answer) && answer.equals(Buffer.from([0x08, 0x01]))) return;
      last = Buffer.isBuffer(answer) ? `status bytes ${answer.toString('hex')}` : answer;
      await sleep(100);
    }
  } finally {
    client.close();
  }
  throw new Error(`hookverify at ${addr} not SERVING within ${timeoutMs} ms (last: ${last})`);
}

/** listen starts an http.Server on an ephemeral loopback port and resolves its base URL. */
function listen(server) {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${server.address().port}`));
  });
}

/**
 * bindLoopback binds a gRPC server (a fake verifier) to an ephemeral loopback port and resolves
 * its address, host:port. Without creds it is plaintext on 127.0.0.1; with TLS creds, give host
 * 'localhost', the name its certificate carries (grpc-js would put an IP address in the TLS
 * server name).
 */
function bindLoopback(grpcServer, { host = '127.0.0.1', creds = grpc.ServerCredentials.createInsecure() } = {}) {
  return new Promise((resolve, reject) => {
    grpcServer.bindAsync(`${host}:0`, creds, (err, port) => (err ? reject(err) : resolve(`${host}:${port}`)));
  });
}

/** closeServer closes an http.Server, dropping idle keep-alive connections; bounded. */
function closeServer(server) {
  return Promise.race([
    new Promise((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
    sleep(5000, { unref: true }),
  ]);
}

/**
 * request sends one HTTP request. headers is an array in rawHeaders form
 * ([name, value, name, value, ...]) so order, case and repeats are exactly as given.
 * Resolves {status, headers, rawHeaders, body: Buffer}.
 */
function request(url, { method = 'POST', headers = [], body, timeoutMs = 15000 } = {}) {
  // With an array of headers Node adds neither Host nor Content-Length: add them as a provider
  // would (Content-Length unless the caller chose Transfer-Encoding).
  const names = headers.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());
  const all = [];
  if (!names.includes('host')) all.push('Host', new URL(url).host);
  all.push(...headers);
  if (!names.includes('content-length') && !names.includes('transfer-encoding')) {
    all.push('Content-Length', String(body ? body.length : 0));
  }
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers: all, agent: false, timeout: timeoutMs }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({
        status: res.statusCode,
        headers: res.headers,
        rawHeaders: res.rawHeaders,
        body: Buffer.concat(chunks),
      }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`request to ${url} timed out after ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * rawExchange talks to an HTTP server over a raw socket, to send what no well-behaved client
 * does (a body or a header section that stops arriving). steps are strings to write and numbers
 * of milliseconds to wait; after the last step the connection stays open, sending nothing more.
 * Resolves {text, closed, ms} once the server ends the connection (closed: true) or waitMs
 * passes (closed: false; the socket is then destroyed): text is everything the server wrote,
 * decoded as latin1, ms the time from the start to that point.
 */
function rawExchange(baseURL, steps, { waitMs = 5000 } = {}) {
  const { hostname, port } = new URL(baseURL);
  return new Promise((resolve, reject) => {
    const started = Date.now();
    let text = '';
    let done = false;
    const finish = (closed) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock.destroy();
      resolve({ text, closed, ms: Date.now() - started });
    };
    const timer = setTimeout(() => finish(false), waitMs);
    const sock = net.connect(Number(port), hostname, async () => {
      for (const step of steps) {
        if (done) return;
        if (typeof step === 'number') await sleep(step);
        else sock.write(step);
      }
    });
    sock.on('data', (d) => {
      text += d.toString('latin1');
    });
    sock.on('end', () => finish(true));
    sock.on('close', () => finish(true));
    sock.on('error', (err) => {
      if (text) {
        finish(true);
        return;
      }
      done = true;
      clearTimeout(timer);
      reject(err);
    });
  });
}

/** signGitHub returns the X-Hub-Signature-256 value for body (a Buffer) under secret. */
function signGitHub(secret, body) {
  return 'sha256=' + crypto.createHmac('sha256', secret).update(body).digest('hex');
}

/** githubDelivery builds the rawHeaders array of a GitHub push delivery. */
function githubHeaders({ secret, body, deliveryId = crypto.randomUUID(), signature }) {
  return [
    'Content-Type', 'application/json',
    'User-Agent', 'GitHub-Hookshot/node-edge-test',
    'X-GitHub-Event', 'push',
    'X-GitHub-Delivery', deliveryId,
    'X-GitHub-Hook-ID', '123456',
    'X-Hub-Signature-256', signature ?? signGitHub(secret, body),
  ];
}

/** sleep resolves after ms; with unref it does not keep the process alive by itself. */
function sleep(ms, { unref = false } = {}) {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    if (unref) t.unref();
  });
}

/** haveOpenssl is whether the openssl command is there to make test certificates. */
const haveOpenssl = (() => {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

/**
 * selfSigned writes dir/name.pem, a self-signed P-256 certificate (its own CA) for subject
 * with the subjectAltName san, and dir/name.key, and returns their paths.
 */
function selfSigned(dir, name, subject, san = 'DNS:localhost') {
  const key = path.join(dir, `${name}.key`);
  const cert = path.join(dir, `${name}.pem`);
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', key, '-out', cert, '-days', '1', '-subj', subject, '-addext', `subjectAltName=${san}`], { stdio: 'ignore' });
  return { key, cert };
}

module.exports = {
  REPO_ROOT, mkTmp, run, buildHookverify, startHookverify, waitServing, listen, bindLoopback, closeServer, request,
  rawExchange, signGitHub, githubHeaders, sleep, haveOpenssl, selfSigned,
};
