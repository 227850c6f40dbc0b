#!/usr/bin/env node
// hookverify Node.js edge: receives a provider's webhook over HTTP at /hooks/:endpoint, forwards
// the request exactly as received (raw body bytes, every header in order with repeats and the
// bytes of its value, method, absolute URL) to hookverify's VerifierService.Verify, and answers
// the provider with the HttpReply hookverify returns.
//
// Failure policy: the provider must retry, never drop. When hookverify cannot answer in time
// (UNAVAILABLE, RESOURCE_EXHAUSTED with RetryInfo, DEADLINE_EXCEEDED, CANCELLED; the first two
// after retries within the deadline, as the Go client does) the edge answers 503 with
// Retry-After, taken from the server's google.rpc.RetryInfo hint when it sends one.
// RESOURCE_EXHAUSTED without RetryInfo is a message over hookverify's receive limit, which no
// retry can pass: 413, as for a body over maxBodyBytes. Any other gRPC error
// (UNAUTHENTICATED and PERMISSION_DENIED included) means the edge or the server is
// misconfigured: the edge answers 500 (providers retry 5xx too) and logs one line, never the
// body, a signature or the API token.
'use strict';

const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const path = require('node:path');
const crypto = require('node:crypto');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

// The repository's proto/ directory; override with HOOKVERIFY_PROTO_DIR when the edge is
// deployed without the repository around it.
const DEFAULT_PROTO_DIR = path.resolve(__dirname, '..', '..', 'proto');

// hookverify's server-wide body ceiling (server.MaxBodyCeiling, 32 MiB). A larger body could
// never be accepted, so the edge stops reading and answers 413 itself, as hookverify would.
const MAX_BODY_BYTES = 32 << 20;
// The largest gRPC message the edge sends: the body ceiling plus room for headers and URL
// (matches the Go client's limit).
const MAX_MESSAGE_BYTES = 34 << 20;

// gRPC codes after which the provider should simply retry later (503), as the Go edge's
// client.Handler answers them. CANCELLED: the edge never cancels its calls, so it comes from
// hookverify's side (a server stopping mid-call resets the stream), which says nothing about
// the delivery: a retry will do, and a 500 would read as the edge's own misconfiguration.
const RETRYABLE = new Set([
  grpc.status.UNAVAILABLE,
  grpc.status.RESOURCE_EXHAUSTED,
  grpc.status.DEADLINE_EXCEEDED,
  grpc.status.CANCELLED,
]);

// The HTTP server's timeouts, the Go edge's (`hookverify edge`): --read-header-timeout (a
// header section that stalls), --read-timeout (a whole request) and its idle timeout (a
// keep-alive connection between requests). Node's own (60 s, 300 s, 5 s) would let a client
// that trickles bytes hold a connection for minutes, and close a provider's keep-alive
// connection under it.
const HEADERS_TIMEOUT_MS = 5000;
const REQUEST_TIMEOUT_MS = 10000;
const IDLE_TIMEOUT_MS = 60000;
// How often Node checks the first two (default 30 s, which would stretch a 5 s timeout to 35).
const TIMEOUT_CHECK_MS = 1000;
// The largest header section the edge reads, the Go edge's: hookverify takes 256 KiB of
// headers, plus a little framing. Node's default, 16 KiB, would answer 431 (a 4xx providers do
// not retry) to deliveries hookverify would take.
const MAX_HEADER_SECTION_BYTES = (256 << 10) + (16 << 10);

// The longest Retry-After the edge passes on from a server hint (the Go edge's MaxRetryAfter),
// so a misconfigured server cannot push a provider's next attempt past its retry window.
const MAX_RETRY_AFTER_SECONDS = 300;

const CODE_NAMES = Object.fromEntries(Object.entries(grpc.status).map(([name, code]) => [code, name]));

// The route: /hooks/<endpoint id>, with an optional query string. The id is passed on
// percent-decoded; hookverify answers unknown ids with a 400 reply (the edge itself answers 404
// an id no endpoint can have, without a call).
const ROUTE = /^\/hooks\/([^/?#]+)(?:\?.*)?$/;

// The health check, as the Go edge's GET /healthz.
const HEALTH = /^\/healthz(?:\?.*)?$/;

// An absolute-form request target (RFC 9112 3.2.2): a scheme, "://", the authority, then the
// path and query. Node passes it on in req.url as received.
const ABSOLUTE_TARGET = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)([^]*)$/;

/**
 * splitTarget splits a request target into its scheme and authority (null for the origin form,
 * "/path?query") and its path and query, as received ("/" in front when an absolute-form
 * target has no path), which the routes are matched against, as net/http does in the Go edge.
 */
function splitTarget(target) {
  const m = ABSOLUTE_TARGET.exec(target);
  if (!m) return { scheme: null, authority: null, pathQuery: target };
  return { scheme: m[1].toLowerCase(), authority: m[2], pathQuery: m[3].startsWith('/') ? m[3] : `/${m[3]}` };
}

// hookverify's rule for endpoint ids. A decoded id outside it can name no endpoint: the edge
// answers 404 itself, as the Go handler does, instead of a call the server refuses as
// INVALID_ARGUMENT (which would read as the edge's own misconfiguration: 500 and an error log).
const ENDPOINT_ID = /^[A-Za-z0-9._-]{1,128}$/;

// Header values are forwarded as the bytes received, which a protobuf string carries only when
// they are UTF-8. Node decodes header bytes as latin1 (one character per byte), so the edge
// turns each value back into its bytes and decodes them as UTF-8; fatal: refuse invalid bytes
// rather than replace them, ignoreBOM: keep a leading BOM as the bytes it is.
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

// The result of within() when the deadline came first.
const TIMED_OUT = Symbol('timed out');
// FULL is readBody's answer when the edge holds maxBytesInFlight of requests.
const FULL = Symbol('bytes in flight');
// The default of createEdge's maxBytesInFlight, as the Go edge's --max-bytes-in-flight.
const MAX_BYTES_IN_FLIGHT = 256 << 20;
// How much of a request's Content-Length is reserved in maxBytesInFlight before its body is
// read, as the Go handler does: the whole of a typical delivery, refused unread when the bound
// is full, but not a large claim nothing backs yet.
const RESERVED_AHEAD = 64 << 10;
// The default of createEdge's maxConnections, as the Go edge's --max-connections.
const MAX_CONNECTIONS = 1024;

/**
 * Loads hookverify.v1 (VerifierService and its messages) from verifier.proto. Bytes fields are
 * Buffers (proto-loader's default), field names are kept as in the .proto (snake_case), enums
 * are their names. google/protobuf/timestamp.proto resolves from the well-known types
 * proto-loader ships.
 */
function loadHookverify(protoDir = process.env.HOOKVERIFY_PROTO_DIR || DEFAULT_PROTO_DIR) {
  const definition = protoLoader.loadSync(
    path.join(protoDir, 'hookverify/v1/verifier.proto'),
    { includeDirs: [protoDir], keepCase: true, longs: String, enums: String, defaults: true, oneofs: true },
  );
  return grpc.loadPackageDefinition(definition).hookverify.v1;
}

/**
 * newVerifierClient dials hookverify: over TLS when tls is given ({ca, cert, key}, each a PEM
 * Buffer or a file path; ca defaults to the system roots, cert and key go together for mutual
 * TLS), in plaintext otherwise (hookverify's loopback development mode).
 */
function newVerifierClient(addr, hookverify = loadHookverify(), { tls } = {}) {
  return dialVerifier(addr, hookverify, tls ? sslCredentials(readTLS(tls)) : grpc.credentials.createInsecure());
}

// Balancing over several hookverify instances, as hookverify's Go client does (client.Dial):
// round robin over every address the target resolves to (a DNS name of several instances, or
// "ipv4:10.0.0.1:7700,10.0.0.2:7700"), and only over the instances whose grpc.health.v1 reports
// SERVING, so that an instance starting, shutting down or without its storage gets no calls
// while another can take them. grpc-js's default (pick_first) sends every call to the first
// address that connects. grpc-js has round_robin but no client-side health checking (its
// service config knows no healthCheckConfig), and round robin alone gives an instance that
// listens but is not SERVING its share: each call answered UNAVAILABLE, a 503 for the provider
// when the few retries all land there. So the edge registers a policy of its own: grpc-js's
// round_robin over connections that each watch grpc.health.v1.Health/Watch and count as down
// until it says SERVING (gRPC's client-side health checking). It is built on grpc-js's
// experimental load-balancer API, one reason @grpc/grpc-js is pinned exactly.
const HEALTHY_ROUND_ROBIN = 'hookverify_healthy_round_robin';
// HealthCheckResponse{status: SERVING}: field 1, varint 1.
const SERVING = Buffer.from([0x08, 0x01]);
// How long a connection waits to watch again after a watch ended while it stays connected.
const HEALTH_REWATCH_MS = 1000;

const HealthClient = grpc.makeGenericClientConstructor({
  Watch: {
    path: '/grpc.health.v1.Health/Watch',
    requestStream: false,
    responseStream: true,
    // HealthCheckRequest{service: ""} encodes to no bytes; responses are compared with SERVING.
    requestSerialize: () => Buffer.alloc(0),
    requestDeserialize: (b) => b,
    responseSerialize: (b) => b,
    responseDeserialize: (b) => b,
  },
}, 'Health');

/**
 * HealthWatchedSubchannel is a connection to one instance that the balancer counts as healthy
 * only while the instance's health, watched over that same connection, says SERVING: not before
 * the first answer (a new connection, or one back after a drop), not after NOT_SERVING (the
 * instance shutting down, or its storage not answering). A server without the health service
 * (UNIMPLEMENTED) counts as healthy, as gRPC does.
 */
class HealthWatchedSubchannel extends grpc.experimental.BaseSubchannelWrapper {
  constructor(child) {
    super(child);
    this.setHealthy(false);
    this.health = new HealthClient('unused', grpc.credentials.createInsecure(), { channelOverride: child.getChannel() });
    this.watch = null;
    this.rewatch = null;
    this.onState = (_subchannel, _previous, state) => this.follow(state);
    child.addConnectivityStateListener(this.onState);
    this.follow(child.getConnectivityState());
  }

  /** follow watches health while the connection is ready; any other state counts as down. */
  follow(state) {
    if (state === grpc.connectivityState.READY) {
      if (!this.watch && !this.rewatch) this.startWatch();
      return;
    }
    this.stopWatch();
    this.setHealthy(false);
  }

  startWatch() {
    const call = this.health.Watch(Buffer.alloc(0));
    this.watch = call;
    call.on('data', (status) => {
      // An answer grpc-js delivers after the watch was cancelled (in flight, or still in the
      // call's filters, when the connection dropped) is about a connection that is gone: it
      // must not count the instance healthy on its next one before that one's watch answers.
      if (this.watch === call) this.setHealthy(SERVING.equals(status));
    });
    call.on('error', () => {}); // the status below says what to do
    call.on('status', ({ code }) => {
      if (this.watch !== call) return; // stopped by stopWatch
      this.watch = null;
      if (code === grpc.status.UNIMPLEMENTED) {
        this.setHealthy(true);
        return;
      }
      // The instance ended the watch (it does when shutting down, after NOT_SERVING): down
      // until a new watch says otherwise.
      this.setHealthy(false);
      this.rewatch = setTimeout(() => {
        this.rewatch = null;
        if (this.child.getConnectivityState() === grpc.connectivityState.READY) this.startWatch();
      }, HEALTH_REWATCH_MS);
      this.rewatch.unref();
    });
  }

  stopWatch() {
    clearTimeout(this.rewatch);
    this.rewatch = null;
    const call = this.watch;
    this.watch = null;
    if (call) call.cancel();
  }

  destroy() {
    this.child.removeConnectivityStateListener(this.onState);
    this.stopWatch();
    super.destroy();
  }
}

const ROUND_ROBIN = grpc.experimental.parseLoadBalancingConfig({ round_robin: {} });

/** HealthyRoundRobin is grpc-js's round_robin over HealthWatchedSubchannels. */
class HealthyRoundRobin {
  constructor(helper) {
    this.child = new grpc.experimental.ChildLoadBalancerHandler(grpc.experimental.createChildChannelControlHelper(helper, {
      createSubchannel: (address, args) => new HealthWatchedSubchannel(helper.createSubchannel(address, args)),
    }));
  }

  updateAddressList(endpoints, _config, options, resolutionNote) {
    return this.child.updateAddressList(endpoints, ROUND_ROBIN, options, resolutionNote);
  }

  exitIdle() { this.child.exitIdle(); }

  resetBackoff() { this.child.resetBackoff(); }

  destroy() { this.child.destroy(); }

  getTypeName() { return HEALTHY_ROUND_ROBIN; }
}

class HealthyRoundRobinConfig {
  getLoadBalancerName() { return HEALTHY_ROUND_ROBIN; }

  toJsonObject() { return { [HEALTHY_ROUND_ROBIN]: {} }; }

  static createFromJson() { return new HealthyRoundRobinConfig(); }
}

grpc.experimental.registerLoadBalancerType(HEALTHY_ROUND_ROBIN, HealthyRoundRobin, HealthyRoundRobinConfig);

function dialVerifier(addr, hookverify, credentials) {
  return new hookverify.VerifierService(addr, credentials, {
    'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
    'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
    'grpc.service_config': JSON.stringify({ loadBalancingConfig: [{ [HEALTHY_ROUND_ROBIN]: {} }] }),
    // Reconnect within seconds once hookverify is back, with the Go client's backoff (100 ms
    // growing to at most 3 s; grpc-js's default grows to 120 s): every delivery meanwhile gets
    // a 503, and providers give an edge about ten seconds.
    'grpc.initial_reconnect_backoff_ms': 100,
    'grpc.max_reconnect_backoff_ms': 3000,
    // Ping an idle connection every 30 s, as hookverify's Go client does (the server accepts
    // pings every 10 s): a NAT or load balancer that drops idle flows silently would otherwise
    // leave a dead connection looking ready, every Verify on it waiting out its deadline.
    'grpc.keepalive_time_ms': 30000,
    'grpc.keepalive_timeout_ms': 10000,
    'grpc.keepalive_permit_without_calls': 1,
  });
}

/**
 * readTLS reads the tls option: {ca, cert, key} as PEM Buffers (null when not given), reading
 * the ones given as file paths. Errors name the option, never quote a file's contents.
 */
function readTLS(tls) {
  const pem = (value, what) => {
    if (value === undefined || value === null || value === '') return null;
    if (Buffer.isBuffer(value)) return value;
    if (typeof value === 'string') {
      try {
        return fs.readFileSync(value);
      } catch (err) {
        throw new Error(`tls.${what}: ${err.message}`);
      }
    }
    throw new Error(`tls.${what} must be a Buffer or a file path`);
  };
  const material = { ca: pem(tls.ca, 'ca'), cert: pem(tls.cert, 'cert'), key: pem(tls.key, 'key') };
  if (!material.cert !== !material.key) throw new Error('tls.cert and tls.key go together (a client certificate for mutual TLS)');
  return material;
}

/**
 * sslCredentials turns PEM material into grpc-js credentials. grpc-js builds the TLS context
 * here, so a certificate that does not match its key, or PEM that does not parse, throws now
 * rather than at the first handshake. The message is Node's (OpenSSL's), which never quotes
 * the key.
 */
function sslCredentials({ ca, cert, key }) {
  return grpc.credentials.createSsl(ca, key, cert);
}

/**
 * verifierClients holds the client the edge calls. With TLS files given as paths, it reads
 * them again at most every checkMs, when a call is about to be made; when their contents
 * changed, it dials a new client with them (a client's connections keep the certificate of
 * their handshake, so only a new one presents a renewed certificate) and closes the old one
 * once the calls it carries have passed their deadline (graceMs). Files that changed but do
 * not load (a certificate written before its key, a file half written) leave the current
 * client in use, reported once per change, as hookverify's Go client does.
 */
function verifierClients(addr, hookverify, tls, { checkMs, graceMs, log }) {
  if (!tls) return fixedClient(dialVerifier(addr, hookverify, grpc.credentials.createInsecure()));
  let seen = readTLS(tls);
  let client = dialVerifier(addr, hookverify, sslCredentials(seen));
  const paths = ['ca', 'cert', 'key'].filter((k) => typeof tls[k] === 'string' && tls[k] !== '');
  if (paths.length === 0) return fixedClient(client); // Buffers: nothing to read again
  const retired = new Set();
  let nextCheck = Date.now() + checkMs;
  let unreadable = false;
  const same = (a, b) => ['ca', 'cert', 'key'].every((k) => (a[k] === null ? b[k] === null : b[k] !== null && a[k].equals(b[k])));
  const report = (err) => log('error', 'the TLS files to hookverify changed but do not load; still using the previous ones', {
    files: paths, error: err.message,
  });
  const refresh = () => {
    let material;
    try {
      material = readTLS(tls);
    } catch (err) {
      if (!unreadable) report(err); // once, until the files can be read again
      unreadable = true;
      return;
    }
    unreadable = false;
    // Contents, not modification times: a file rewritten within the clock's tick is a change.
    if (same(material, seen)) return;
    seen = material; // each change is tried once, so broken files are reported once
    let next;
    try {
      next = dialVerifier(addr, hookverify, sslCredentials(material));
    } catch (err) {
      report(err);
      return;
    }
    const old = client;
    client = next;
    retired.add(old);
    // Closing a grpc-js client fails the calls still waiting for its connection: wait until
    // every call made on it has passed its deadline.
    setTimeout(() => {
      retired.delete(old);
      old.close();
    }, graceMs).unref();
    log('info', 'reloaded the TLS files to hookverify', { files: paths });
  };
  return {
    get() {
      if (Date.now() >= nextCheck) {
        nextCheck = Date.now() + checkMs;
        refresh();
      }
      return client;
    },
    close() {
      for (const old of retired) old.close();
      retired.clear();
      client.close();
    },
  };
}

function fixedClient(client) {
  return { get: () => client, close: () => client.close() };
}

/**
 * checkToken refuses a token gRPC metadata cannot carry (printable ASCII without spaces, as
 * the Go client requires); the message never quotes the token.
 */
function checkToken(token) {
  if (typeof token !== 'string' || !/^[\x21-\x7e]+$/.test(token)) {
    throw new Error('the API token must be printable ASCII without spaces');
  }
}

// Addresses to which a token may be sent in plaintext.
const LOOPBACK = new net.BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/**
 * isLoopback reports whether a gRPC target names a loopback address or a Unix socket, where a
 * token may travel in plaintext (the same rule as the Go client's Dial). A list of instances
 * (ipv4:a:port,b:port) is loopback when every one is.
 */
function isLoopback(target) {
  if (/^unix(-abstract)?:/.test(target)) return true;
  if (/^ipv[46]:/.test(target)) return target.slice('ipv4:'.length).split(',').every(isLoopbackAddress);
  return isLoopbackAddress(target.replace(/^(dns:\/\/\/|passthrough:\/\/\/)/, ''));
}

/** isLoopbackAddress is isLoopback for one host:port, [v6]:port or host. */
function isLoopbackAddress(address) {
  let host = address;
  const bracketed = /^\[([^\]]+)\](?::\d*)?$/.exec(host);
  if (bracketed) host = bracketed[1];
  else if (host.split(':').length === 2) host = host.slice(0, host.lastIndexOf(':'));
  if (host.toLowerCase() === 'localhost') return true;
  const family = net.isIP(host);
  return family !== 0 && LOOPBACK.check(host, family === 4 ? 'ipv4' : 'ipv6');
}

// The trailer in which a gRPC server sends the google.rpc.Status of an error with details.
const STATUS_DETAILS_TRAILER = 'grpc-status-details-bin';
const RETRY_INFO_TYPE = 'google.rpc.RetryInfo';

/**
 * protoFields splits one protobuf message into [fieldNumber, wireType, value] triples: a
 * BigInt for varints, a Buffer for length-delimited fields; fixed32/fixed64 fields are skipped.
 * It returns null for anything malformed (truncated data, a varint over 10 bytes, groups,
 * unknown wire types), never throws.
 */
function protoFields(buf) {
  const out = [];
  let pos = 0;
  const varint = () => {
    let value = 0n;
    for (let shift = 0n; shift < 70n && pos < buf.length; shift += 7n) {
      const byte = buf[pos++];
      value |= BigInt(byte & 0x7f) << shift;
      if (byte < 0x80) return BigInt.asUintN(64, value);
    }
    return null;
  };
  while (pos < buf.length) {
    const tag = varint();
    if (tag === null || tag >> 3n === 0n || tag >> 3n > 0x1fffffffn) return null;
    const field = Number(tag >> 3n);
    const wire = Number(tag & 7n);
    if (wire === 0) {
      const v = varint();
      if (v === null) return null;
      out.push([field, wire, v]);
    } else if (wire === 2) {
      const len = varint();
      if (len === null || len > BigInt(buf.length - pos)) return null;
      out.push([field, wire, buf.subarray(pos, pos + Number(len))]);
      pos += Number(len);
    } else if (wire === 1 || wire === 5) {
      pos += wire === 1 ? 8 : 4;
      if (pos > buf.length) return null;
    } else {
      return null;
    }
  }
  return out;
}

/**
 * retryDelaySeconds reads the google.rpc.RetryInfo hint from a serialized google.rpc.Status
 * (the grpc-status-details-bin trailer): the retry_delay in seconds, a fraction allowed, or
 * null when there is no RetryInfo or its delay is not a valid google.protobuf.Duration.
 * Malformed input gives null; it never throws.
 */
function retryDelaySeconds(statusBytes) {
  const info = retryInfoFields(statusBytes);
  if (!info) return null;
  // RetryInfo.retry_delay (field 1); repeated occurrences of a message field merge, which for a
  // Duration is the same as reading them concatenated.
  const parts = info.filter(([f, w]) => f === 1 && w === 2).map(([, , v]) => v);
  if (parts.length === 0) return null;
  const duration = protoFields(Buffer.concat(parts));
  if (!duration) return null;
  let seconds = 0n;
  let nanos = 0n;
  for (const [f, w, v] of duration) {
    if (f === 1 && w === 0) seconds = BigInt.asIntN(64, v); // Duration.seconds: int64
    if (f === 2 && w === 0) nanos = BigInt.asIntN(32, v); // Duration.nanos: int32
  }
  // google.protobuf.Duration's own validity rules (as Go's durationpb IsValid).
  if (seconds < -315576000000n || seconds > 315576000000n) return null;
  if (nanos <= -1000000000n || nanos >= 1000000000n) return null;
  if ((seconds < 0n && nanos > 0n) || (seconds > 0n && nanos < 0n)) return null;
  return Number(seconds) + Number(nanos) / 1e9;
}

/**
 * retryInfoFields returns the fields of the first google.rpc.RetryInfo detail of a serialized
 * google.rpc.Status, or null when it has none that parses. Malformed input gives null; it never
 * throws.
 */
function retryInfoFields(statusBytes) {
  if (!Buffer.isBuffer(statusBytes)) return null;
  const status = protoFields(statusBytes);
  if (!status) return null;
  for (const [field, wire, any] of status) {
    if (field !== 3 || wire !== 2) continue; // Status.details: repeated google.protobuf.Any
    const anyFields = protoFields(any);
    if (!anyFields) continue;
    let typeUrl = null;
    let value = Buffer.alloc(0);
    for (const [f, w, v] of anyFields) {
      if (f === 1 && w === 2) typeUrl = v.toString('utf8'); // Any.type_url
      if (f === 2 && w === 2) value = v; // Any.value
    }
    if (typeUrl === null || typeUrl.slice(typeUrl.lastIndexOf('/') + 1) !== RETRY_INFO_TYPE) continue;
    return protoFields(value);
  }
  return null;
}

/**
 * overReceiveLimit says whether a gRPC error is RESOURCE_EXHAUSTED without a RetryInfo detail:
 * not hookverify's backpressure, which always carries one, but gRPC refusing a message larger
 * than the server's receive limit (verifier.proto), which no retry can pass.
 */
function overReceiveLimit(err) {
  if (!err || err.code !== grpc.status.RESOURCE_EXHAUSTED) return false;
  try {
    return retryInfoFields(statusDetails(err)) === null;
  } catch {
    return true;
  }
}

/**
 * statusDetails is the serialized google.rpc.Status a gRPC error carries in its trailers, or
 * undefined. It may throw on a hostile metadata object: callers catch.
 */
function statusDetails(err) {
  const values = err && err.metadata && typeof err.metadata.get === 'function' ? err.metadata.get(STATUS_DETAILS_TRAILER) : [];
  return values.length > 0 ? values[0] : undefined;
}

/**
 * retryAfterFor is the Retry-After, in whole seconds, for a retryable gRPC error: the server's
 * RetryInfo hint rounded up, within [1, MAX_RETRY_AFTER_SECONDS], else fallback.
 */
function retryAfterFor(err, fallback) {
  const hint = retryHintSeconds(err);
  if (hint === null) return wholeSeconds(fallback);
  return wholeSeconds(Math.min(hint, MAX_RETRY_AFTER_SECONDS));
}

/** retryHintSeconds is the RetryInfo delay a gRPC error carries, in seconds, or null. */
function retryHintSeconds(err) {
  try {
    const hint = retryDelaySeconds(statusDetails(err));
    return hint !== null && Number.isFinite(hint) ? hint : null;
  } catch {
    return null;
  }
}

/**
 * wholeSeconds is a Retry-After value: delay-seconds are digits only (RFC 9110), so a delay is
 * rounded up to whole seconds, and at least 1.
 */
function wholeSeconds(seconds) {
  return Math.max(1, Math.ceil(seconds));
}

/**
 * within settles as promise does, or resolves TIMED_OUT once deadline (a Date.now() value)
 * passes first. A later rejection of promise is handled (Promise.race subscribes to it).
 */
function within(promise, deadline) {
  let timer;
  const expiry = new Promise((resolve) => {
    timer = setTimeout(resolve, Math.max(0, deadline - Date.now()), TIMED_OUT);
  });
  return Promise.race([promise, expiry]).finally(() => clearTimeout(timer));
}

/** msSince is the time since start (a performance.now() value), in ms to the microsecond. */
function msSince(start) {
  return Math.round((performance.now() - start) * 1000) / 1000;
}

/** defaultLog writes one JSON line to stderr. */
function defaultLog(level, msg, fields) {
  process.stderr.write(JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields }) + '\n');
}

const LOG_LEVELS = ['debug', 'info', 'warn', 'error'];

/**
 * leveledLog is defaultLog without the lines below level (debug, info, warn or error), as the
 * Go edge's --log-level: at warn, the access log (info) is off.
 */
function leveledLog(level) {
  const min = LOG_LEVELS.indexOf(String(level).toLowerCase());
  if (min < 0) throw new Error(`the log level must be one of ${LOG_LEVELS.join(', ')}`);
  return (l, msg, fields) => {
    if (LOG_LEVELS.indexOf(l) >= min) defaultLog(l, msg, fields);
  };
}

/**
 * rawHeaderFields turns req.rawHeaders ([name, value, name, value, ...], as Node decodes them:
 * latin1) into HeaderFields whose values are the received bytes decoded as UTF-8, so protobuf
 * forwards those same bytes. Returns null when a value is not valid UTF-8 (a protobuf string
 * cannot carry it; the Go handler refuses it too). Names are HTTP tokens, ASCII only.
 */
function rawHeaderFields(rawHeaders) {
  const out = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    let value;
    try {
      value = UTF8.decode(Buffer.from(rawHeaders[i + 1], 'latin1'));
    } catch {
      return null;
    }
    out.push({ name: rawHeaders[i], value });
  }
  return out;
}

/**
 * readBody collects the raw request body, or resolves null once it passes limit, or FULL when
 * take(n), asked for every n bytes that arrive, refuses them.
 */
function readBody(req, limit, take = () => true) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    let over = false;
    req.on('data', (chunk) => {
      if (over) return;
      size += chunk.length;
      if (size > limit) {
        over = true;
        chunks.length = 0;
        resolve(null);
        return;
      }
      if (!take(chunk.length)) {
        over = true;
        chunks.length = 0;
        resolve(FULL);
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (!over) resolve(Buffer.concat(chunks, size));
    });
    req.on('error', reject);
    req.on('close', () => {
      if (!req.complete) reject(new Error('the connection closed before the body ended'));
    });
  });
}

/**
 * answerUnread answers a request whose body the edge does not need. The body is drained, so
 * that the connection can serve the next request; but while it has not all arrived, the answer
 * closes the connection: a body that stalls would otherwise hold it until requestTimeoutMs,
 * however early it was answered.
 */
function answerUnread(req, res, status, doc, extraHeaders = {}) {
  req.resume();
  const noBody = req.headers['transfer-encoding'] === undefined && (req.headers['content-length'] ?? '0') === '0';
  const headers = req.complete || noBody ? extraHeaders : { ...extraHeaders, Connection: 'close' };
  if (typeof doc === 'string') sendText(res, status, doc, headers);
  else sendJSON(res, status, doc, headers);
}

/**
 * sendText answers as Go's net/http answers a request its ServeMux routes nowhere (http.Error):
 * the Go edge's 404 and 405, so that a provider or a load balancer gets the same answer from
 * either edge.
 */
function sendText(res, status, text, extraHeaders = {}) {
  const body = Buffer.from(text);
  res.writeHead(status, {
    'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff', 'Content-Length': body.length, ...extraHeaders,
  });
  res.end(body);
}

// The header fields about a connection rather than the delivery (RFC 9110 7.6.1, and the proxy
// credentials: Go's httputil.ReverseProxy list), lower case. Node keeps them all in rawHeaders;
// Go's net/http removes Transfer-Encoding and Trailer, and a proxy in front, or HTTP/2, the rest.
const HOP_BY_HOP = new Set(['connection', 'proxy-connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade']);
// The fields Go's net/http removes from a request's header before the Go edge counts them.
const NOT_COUNTED = new Set(['transfer-encoding', 'trailer']);

/**
 * withoutHopByHop is headers (HeaderFields) without the hop-by-hop fields and those the
 * Connection header names (never Host), as the Go edge forwards them: no provider signs them,
 * and forwarded, the same delivery was stored differently depending on the hops it took, with
 * a proxy's credentials among its headers. They are dropped after the checks (UTF-8, the
 * header count; beyondServerLimits counts their bytes as not forwarded), as in the Go edge, and
 * the request keeps them (X-Forwarded-Proto still gives the scheme).
 */
function withoutHopByHop(headers) {
  const drop = new Set(HOP_BY_HOP);
  for (const f of headers) {
    if (f.name.toLowerCase() !== 'connection') continue;
    for (const name of f.value.split(',')) {
      const n = name.trim().toLowerCase();
      if (n !== '' && n !== 'host') drop.add(n);
    }
  }
  return headers.filter((f) => !drop.has(f.name.toLowerCase()));
}

// hookverify's limits on what Verify forwards (client.MaxHeaderCount, MaxHeaderBytes and
// MaxURLBytes in the Go client; the server refuses more with INVALID_ARGUMENT).
const MAX_HEADER_COUNT = 500;
const MAX_HEADER_BYTES = 256 * 1024;
const MAX_URL_BYTES = 16 * 1024;

/**
 * beyondServerLimits says which of hookverify's limits the headers or URL pass (names plus
 * values, in UTF-8 bytes, as the server counts them), or null when they fit.
 */
function beyondServerLimits(headers, url, host) {
  // As the Go edge (client.Verify) counts: every field but Transfer-Encoding and Trailer, which
  // net/http removes before it sees them, towards the count; only the fields forwarded (not
  // the hop-by-hop ones, withoutHopByHop) towards the bytes.
  const count = headers.filter((f) => !NOT_COUNTED.has(f.name.toLowerCase())).length;
  if (count > MAX_HEADER_COUNT) return `${count} headers, more than the server's limit of ${MAX_HEADER_COUNT}`;
  let total = 0;
  for (const h of withoutHopByHop(headers)) total += Buffer.byteLength(h.name) + Buffer.byteLength(h.value);
  if (total > MAX_HEADER_BYTES) return `headers of ${total} bytes, more than the server's limit of ${MAX_HEADER_BYTES}`;
  const urlBytes = Buffer.byteLength(url);
  if (urlBytes > MAX_URL_BYTES) return `a URL of ${urlBytes} bytes, more than the server's limit of ${MAX_URL_BYTES}`;
  // Node takes any Host value: one that starts with '/' left the URL without a host, which
  // hookverify refuses as the edge's fault (answered 500 and logged as a misconfiguration),
  // one holding '/', '?' or '#' a path other than the one received, and the rest URLs that
  // hookverify's protocols cannot parse and its inbox stores. A server must answer an invalid
  // Host 400 (RFC 9110 7.2), as the Go edge does (host is null when publicBaseUrl gives the
  // URL's front).
  if (host != null && !validHost(host)) return 'a Host header that is not a host[:port]';
  return null;
}

// RFC 3986 reg-name (IPv4 addresses too): unreserved and sub-delims, but no percent-encodings.
// RFC 3986 allows them, but no provider sends one ("Host: a%41b"): the host names the edge as
// the provider's HTTP client resolved it, a DNS name (an IDN as its xn-- form) or an IP address,
// and clients decode or refuse an escape in a host. Forwarded, it made a URL that Go's url.Parse
// refuses, which hookverify stored and its URL-reading protocols rejected as malformed. The Go
// edge (client.Handler) refuses it too.
const REG_NAME = /^[A-Za-z0-9\-._~!$&'()*+,;=]+$/;
// RFC 3986 IPvFuture, between the brackets of an IP-literal.
const IPV_FUTURE = /^[vV][0-9A-Fa-f]+\.[A-Za-z0-9\-._~!$&'()*+,;=:]+$/;

/**
 * validHost says whether a Host value (RFC 9110 7.2: uri-host [ ":" port ]) names a host, as
 * the Go edge's check does: an IP-literal (an IPv6 address without a zone, or IPvFuture) or a
 * non-empty reg-name (RFC 3986 3.2.2) without percent-encodings, then an optional port of digits ("host:" is allowed, RFC
 * 3986 3.2.3).
 */
function validHost(hostport) {
  let port;
  if (hostport.startsWith('[')) {
    const end = hostport.indexOf(']');
    if (end < 0) return false;
    const literal = hostport.slice(1, end);
    if (!IPV_FUTURE.test(literal) && !(net.isIPv6(literal) && !literal.includes('%'))) return false;
    port = hostport.slice(end + 1);
  } else {
    const colon = hostport.indexOf(':');
    if (!REG_NAME.test(colon < 0 ? hostport : hostport.slice(0, colon))) return false;
    port = colon < 0 ? '' : hostport.slice(colon);
  }
  return /^(?::[0-9]*)?$/.test(port);
}

/** sendJSON answers with a small JSON document generated by the edge itself. */
function sendJSON(res, status, doc, extraHeaders = {}) {
  const body = Buffer.from(JSON.stringify(doc));
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': body.length, ...extraHeaders });
  res.end(body);
}

/**
 * checkBaseUrl validates a public base URL (http(s)://host[:port][/prefix], the scheme in lower
 * case, no credentials, query or fragment, no space, control character or broken %-escape) and
 * returns it without trailing slashes. A path prefix is for proxies that strip it before the
 * request reaches the edge. The base is the front of every forwarded URL, which URL-signing
 * providers sign byte for byte: one that cannot be would have all their deliveries rejected (a
 * 4xx most never retry). The error does not quote the value: it might hold credentials.
 */
function checkBaseUrl(raw) {
  let u = null;
  // The scheme in lower case and every '%' an escape, as the Go edge's client.CheckPublicURLBase
  // (Go's url.Parse) requires: a base that edge refuses at start must not be used here.
  if (typeof raw === 'string' && /^https?:\/\//.test(raw) && !/[\x00-\x20\x7f]/.test(raw) && !/%(?![0-9A-Fa-f]{2})/.test(raw)) {
    try {
      u = new URL(raw);
    } catch { /* not a URL */ }
  }
  if (!u || !u.host || /^https?:\/\/[^/]*@/i.test(raw) || u.search || u.hash || raw.includes('?') || raw.includes('#')) {
    throw new Error('publicBaseUrl must be http(s)://host[:port][/prefix], without credentials, query, fragment, spaces or control characters');
  }
  return raw.replace(/\/+$/, '');
}

/**
 * createEdge returns an http.Server (not yet listening) that forwards /hooks/:endpoint to
 * hookverify. Closing the server also closes its gRPC client (unless one was passed in).
 *
 * @param {object} opts
 * @param {string} [opts.verifierAddr='127.0.0.1:7700'] hookverify's gRPC address.
 * @param {string} [opts.publicBaseUrl] The scheme and host (and any path prefix a proxy strips)
 *   providers call, e.g. "https://hooks.example.com"; the forwarded URL is publicBaseUrl + req.url. Without it the
 *   URL is "http://" + the Host header, which is wrong behind a TLS-terminating proxy (it only
 *   matters for protocols that sign the URL).
 * @param {boolean} [opts.trustForwardedProto=false] Without publicBaseUrl, take the URL's scheme
 *   from the X-Forwarded-Proto header (its first value, http or https). Only behind a proxy
 *   that sets and overwrites it: otherwise whoever calls the edge chooses it.
 * @param {number} [opts.deadlineMs=8000] Time the edge gives each request from its arrival: reading
 *   the body, Verify and onEvent (GitHub waits 10 s for an answer). A body that has not arrived
 *   by then gets 503 with Retry-After and the connection is dropped; a Verify or onEvent that
 *   has not finished gets 503 with Retry-After.
 * @param {string|null} [opts.token=process.env.HOOKVERIFY_TOKEN] API token sent on every call as
 *   the gRPC metadata "authorization: Bearer <token>" (a verify:<endpoints> scope is enough);
 *   null or '' sends none. Without tls it is only sent to a loopback address: createEdge
 *   throws otherwise, since the token would cross the network in clear.
 * @param {object} [opts.tls] TLS to hookverify: {ca, cert, key}, each a PEM Buffer or a file
 *   path; ca defaults to the system roots, cert and key (together) are a client certificate for
 *   mutual TLS. Without it the channel is plaintext (hookverify on loopback). Files given as
 *   paths are read again when a call is made at least tlsReloadMs after the last check; when
 *   their contents changed, the edge dials hookverify anew with them (renewed certificates
 *   need no restart). Files that changed but do not load leave the previous ones in use, with
 *   one error log line. Buffers are used as given.
 * @param {number} [opts.tlsReloadMs=5000] How often, at most, TLS files are read again.
 * @param {number} [opts.retryAfterSeconds=10] Retry-After on 503 when hookverify sends no
 *   RetryInfo hint (its backpressure refusals do; the hint is used, within [1, 300] s). Sent
 *   rounded up to whole seconds, at least 1.
 * @param {number} [opts.maxBodyBytes=32 MiB] Bodies above this get 413 without a call. A whole
 *   number from 1 to 32 MiB (hookverify's ceiling); createEdge throws otherwise.
 * @param {number} [opts.maxBytesInFlight=256 MiB] Bounds the requests (headers, URL and body)
 *   the edge holds at once, from their reading to their answer, as the Go edge's
 *   --max-bytes-in-flight: the first 64 KiB of a request's Content-Length are reserved before
 *   its body is read, the rest as it arrives, and one past the bound gets 503 with Retry-After,
 *   unread (further).
 *   A single request larger than the bound passes when nothing else is held. 0: no bound.
 *   Without it, anyone who can reach the edge could make it hold requests times maxBodyBytes
 *   until the process ran out of memory, cutting every delivery in flight.
 * @param {number} [opts.maxConnections=1024] Bounds the connections open at once, idle
 *   keep-alive ones included, as the Go edge's --max-connections: at the bound a new
 *   connection takes the slot of the keep-alive connection idle the longest between requests,
 *   once idle for a second, closing it (an info line at most every 10 s), and only when none is idle is the new one
 *   closed at once (the provider retries; a warning at most every 10 s), where the Go edge
 *   leaves it waiting to be accepted. A connection reading or answering a request is never
 *   closed. Each holds up to 272 KiB of headers before maxBytesInFlight counts it; without a
 *   bound, anyone could open connections until the process ran out of file descriptors or
 *   memory. 0: no bound. (Node's server.maxConnections is not used: it would close the new
 *   connection, however many sat idle.)
 * @param {number} [opts.headersTimeoutMs=5000] Time allowed to receive a request's header
 *   section (the Go edge's --read-header-timeout); then 503 with Retry-After.
 * @param {number} [opts.requestTimeoutMs=10000] Time allowed to receive a whole request (the Go
 *   edge's --read-timeout), at least headersTimeoutMs; then 503 with Retry-After. A body still
 *   arriving when deadlineMs passes gets that answer sooner.
 * @param {number} [opts.idleTimeoutMs=60000] How long a keep-alive connection may wait for its
 *   next request (the Go edge's idle timeout).
 * @param {Function} [opts.log] (level, msg, fields) logger; defaults to JSON lines on stderr.
 *   Besides warnings and errors it gets one 'info' line per request, msg 'request' (the access
 *   log): drop 'info' lines to turn it off.
 * @param {Function} [opts.onEvent] async ({response, request}) => void, called for ACCEPTED and
 *   DUPLICATE before the provider is answered, to hand the event downstream (e.g. enqueue a
 *   job keyed by response.operation_key). It runs for DUPLICATE too, because an edge that
 *   crashed after ACCEPTED but before handing off only sees the redelivery, as a duplicate;
 *   downstream must therefore dedupe on operation_key. If it throws, or has not settled when
 *   the request's deadline (deadlineMs) passes, the edge answers 503 and the provider retries
 *   (the retry is a DUPLICATE with the same operation_key).
 * @param {object} [opts.client] A VerifierService client to use instead of dialing.
 * @param {string} [opts.protoDir] Where hookverify/v1/*.proto live.
 */
function createEdge(opts = {}) {
  const {
    verifierAddr = '127.0.0.1:7700',
    publicBaseUrl,
    deadlineMs = 8000,
    retryAfterSeconds = 10,
    maxBodyBytes = MAX_BODY_BYTES,
    maxBytesInFlight = MAX_BYTES_IN_FLIGHT,
    maxConnections = MAX_CONNECTIONS,
    log = defaultLog,
    protoDir,
    onEvent,
    token = process.env.HOOKVERIFY_TOKEN,
    tls,
    tlsReloadMs = 5000,
    trustForwardedProto = false,
    headersTimeoutMs = HEADERS_TIMEOUT_MS,
    requestTimeoutMs = REQUEST_TIMEOUT_MS,
    idleTimeoutMs = IDLE_TIMEOUT_MS,
  } = opts;
  const base = publicBaseUrl ? checkBaseUrl(publicBaseUrl) : null;
  if (!Number.isInteger(maxBodyBytes) || maxBodyBytes < 1 || maxBodyBytes > MAX_BODY_BYTES) {
    // hookverify can never accept a larger body: it would be uploaded, and sent on, for nothing.
    throw new Error(`maxBodyBytes must be a whole number from 1 to ${MAX_BODY_BYTES} (32 MiB), got ${maxBodyBytes}`);
  }
  if (!Number.isInteger(maxBytesInFlight) || maxBytesInFlight < 0) {
    throw new Error(`maxBytesInFlight must be a whole number of bytes, 0 for no bound, got ${maxBytesInFlight}`);
  }
  if (!Number.isInteger(maxConnections) || maxConnections < 0) {
    throw new Error(`maxConnections must be a whole number, 0 for no bound, got ${maxConnections}`);
  }
  // The bytes of the requests held now (maxBytesInFlight), and when a refusal was last logged.
  let bytesHeld = 0;
  let fullLoggedAt = 0;
  let fullNotLogged = 0;
  /** takeBytes reserves n more bytes for a request holding hold.n already, or refuses them. */
  const takeBytes = (hold, n) => {
    if (maxBytesInFlight > 0 && bytesHeld > hold.n && bytesHeld + n > maxBytesInFlight) return false;
    bytesHeld += n;
    hold.n += n;
    return true;
  };
  // The exchanges of each connection not yet ended: see whenEnded.
  const pendingOn = new WeakMap();
  /**
   * whenEnded calls fn once, when res closes or, if first, its connection does. A response
   * pipelined behind another waits for its turn without the connection, and when the
   * connection ends first Node never emits that response's 'close': what the exchange holds
   * (its bytes in maxBytesInFlight, its request and body through inFlight) would be held for
   * good, and its access log line never written. One listener per connection, however many
   * requests it pipelines.
   */
  const whenEnded = (req, res, fn) => {
    const socket = req.socket;
    let pending = pendingOn.get(socket);
    if (!pending) {
      pending = new Set();
      pendingOn.set(socket, pending);
      socket.once('close', () => {
        for (const end of [...pending]) end();
      });
    }
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      pending.delete(end);
      fn();
    };
    pending.add(end);
    res.once('close', end);
  };
  // NaN or a non-positive value would time every request out at once, or write Retry-After: NaN.
  if (typeof deadlineMs !== 'number' || !Number.isFinite(deadlineMs) || deadlineMs <= 0) {
    throw new Error(`deadlineMs must be a positive number of milliseconds, got ${deadlineMs}`);
  }
  if (typeof retryAfterSeconds !== 'number' || !Number.isFinite(retryAfterSeconds) || retryAfterSeconds <= 0) {
    throw new Error(`retryAfterSeconds must be a positive number, got ${retryAfterSeconds}`);
  }
  if (token) {
    checkToken(token);
    if (!tls && !opts.client && !isLoopback(verifierAddr)) {
      throw new Error(`refusing to send the API token in clear to ${verifierAddr}; set the tls option`);
    }
  }
  for (const [name, ms] of Object.entries({ tlsReloadMs, headersTimeoutMs, requestTimeoutMs, idleTimeoutMs })) {
    if (typeof ms !== 'number' || !Number.isFinite(ms) || ms <= 0) {
      throw new Error(`${name} must be a positive number of milliseconds, got ${ms}`);
    }
  }
  if (headersTimeoutMs > requestTimeoutMs) {
    // The header section is part of the request: Node refuses the pair too, less clearly.
    throw new Error(`headersTimeoutMs (${headersTimeoutMs}) must be at most requestTimeoutMs (${requestTimeoutMs})`);
  }
  const ownClient = !opts.client;
  // An old client is closed once every call it carries has passed its deadline.
  const clients = opts.client ? fixedClient(opts.client)
    : verifierClients(verifierAddr, loadHookverify(protoDir), tls, { checkMs: tlsReloadMs, graceMs: deadlineMs + 1000, log });
  // The token goes as per-call metadata rather than call credentials: grpc-js only sends call
  // credentials over TLS, and the loopback development setup is plaintext.
  const callMetadata = () => {
    const md = new grpc.Metadata();
    if (token) md.set('authorization', `Bearer ${token}`);
    return md;
  };

  // The latest request and response on each connection, for the clientError listener below.
  const exchanges = new WeakMap();
  // Responses not yet finished, and whether shutdown() has begun: see shutdown below.
  const inFlight = new Set();
  let closing = false;
  // Requests sent with Expect: 100-continue whose 100 Continue has not been sent yet: see
  // handle, which sends it only once it wants the body.
  const awaitingContinue = new WeakSet();
  const server = http.createServer({
    headersTimeout: headersTimeoutMs,
    requestTimeout: requestTimeoutMs,
    keepAliveTimeout: idleTimeoutMs,
    connectionsCheckingInterval: Math.min(TIMEOUT_CHECK_MS, headersTimeoutMs),
    maxHeaderSize: MAX_HEADER_SECTION_BYTES,
  });
  const serve = (req, res) => {
    const started = performance.now();
    const outcome = {};
    exchanges.set(req.socket, { req, res, outcome });
    inFlight.add(res);
    connections?.requestStarted(req.socket);
    whenEnded(req, res, () => {
      inFlight.delete(res);
      connections?.requestEnded(req.socket);
      accessLog(req, res, outcome, started);
    });
    if (closing) res.setHeader('Connection', 'close');
    handle(req, res, outcome).catch((err) => {
      // A bug, not a verdict: answer 500 (the provider retries) rather than crash the process.
      log('error', 'edge failed handling a delivery', { error: err && err.message });
      if (!res.headersSent) sendJSON(res, 500, { status: 'error' });
      else res.destroy();
    });
  };
  server.on('request', serve);
  // The bound on the connections open at once (maxConnections), told of each request by serve.
  const connections = maxConnections > 0 ? limitConnections(server, maxConnections, log) : null;
  // Without this listener Node sends 100 Continue before the edge sees the request, so a
  // provider that waits for it uploads a body the edge then refuses (413, 404). As the Go edge
  // does, it is sent only when the body is read; an answer without it closes the connection.
  server.on('checkContinue', (req, res) => {
    awaitingContinue.add(req);
    serve(req, res);
  });

  /**
   * accessLog writes one 'info' line per request, as the Go edge does: method, path (never the
   * query, which may hold a provider's token), status (0 when no answer was sent: the provider
   * went away), duration; for /hooks/ routes the endpoint and verdict, any reject reason,
   * and, when Verify was called, its gRPC code and time (retries included). Never bodies or
   * header values.
   */
  function accessLog(req, res, outcome, started) {
    const fields = {
      method: req.method,
      path: /^[^?#]*/.exec(splitTarget(req.url).pathQuery)[0],
      status: res.headersSent ? res.statusCode : outcome.status ?? 0, // outcome.status: see clientError
      duration_ms: msSince(started),
    };
    if (outcome.endpoint !== undefined) {
      fields.endpoint = outcome.endpoint;
      fields.verdict = outcome.response?.verdict ?? 'VERDICT_UNSPECIFIED';
      const reason = outcome.response?.reject_reason;
      if (reason && reason !== 'REJECT_REASON_UNSPECIFIED') fields.reason = reason;
    }
    if (outcome.grpcCode !== undefined) {
      fields.grpc_code = outcome.grpcCode;
      fields.verifier_duration_ms = outcome.verifierMs;
    }
    // A load balancer's health checks, every few seconds, at debug, as the Go edge does.
    log(HEALTH.test(splitTarget(req.url).pathQuery) ? 'debug' : 'info', 'request', fields);
  }

  // Node's timeouts (headersTimeoutMs for a header section that never ends, requestTimeoutMs for
  // a request that never ends) answer 408, a 4xx several providers never retry: answer 503 +
  // Retry-After instead, as the Go edge does for a body that does not arrive in time. Any other
  // malformed request gets Node's own answer. As Node does, nothing is written once the
  // response to a request still being received has started.
  server.on('clientError', (err, socket) => {
    const last = exchanges.get(socket);
    const answerable = socket.writable && (!last || !last.res.headersSent || (last.req.complete && last.res.writableFinished));
    if (answerable) {
      const timeout = err.code === 'ERR_HTTP_REQUEST_TIMEOUT';
      const status = timeout ? 503 : { HPE_HEADER_OVERFLOW: 431, HPE_CHUNK_EXTENSIONS_OVERFLOW: 413 }[err.code] ?? 400;
      // For the access log of a request being handled (a body that stopped arriving).
      if (last && !last.res.headersSent) last.outcome.status = status;
      if (timeout) {
        log('warn', 'the request did not arrive within the server\'s timeout; asking the provider to retry', { error: err.message });
        const body = JSON.stringify({ status: 'unavailable' });
        socket.write(`HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n`
          + `Retry-After: ${wholeSeconds(retryAfterSeconds)}\r\nConnection: close\r\n\r\n${body}`);
      } else {
        socket.write(`HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nConnection: close\r\n\r\n`);
      }
    }
    socket.destroy(err);
  });

  // The scheme the provider used: X-Forwarded-Proto only when trusted (a proxy in front sets
  // and overwrites it; otherwise the caller chooses it), its first value (the first proxy's),
  // and only http or https, as the Go edge does.
  const scheme = (req) => {
    if (!trustForwardedProto) return 'http';
    const first = String(req.headers['x-forwarded-proto'] ?? '').split(',')[0].trim().toLowerCase();
    return first === 'https' || first === 'http' ? first : 'http';
  };

  /**
   * verify calls Verify, retried as hookverify's Go client does (client.DefaultRetryPolicy):
   * after UNAVAILABLE or RESOURCE_EXHAUSTED, up to 4 attempts within 5 s and the deadline,
   * sleeping a random time below 100 ms, 200 ms, 400 ms... (at most 2 s), or the server's
   * RetryInfo hint when longer; a hint that does not fit ends the retries at once, and goes
   * to the provider as Retry-After. A restart of hookverify, or a connection dropped by a load
   * balancer, then costs the provider nothing. Safe: the claim is idempotent by event
   * identity, so an attempt that committed before its answer was lost makes the retry a
   * DUPLICATE with the same operation key.
   */
  async function verify(request, deadline) {
    const start = Date.now();
    for (let attempt = 1; ; attempt++) {
      const result = await new Promise((resolve) => {
        clients.get().Verify(request, callMetadata(), { deadline }, (err, resp) => resolve({ err, resp }));
      });
      const code = result.err && result.err.code;
      if (!result.err || attempt >= 4 || (code !== grpc.status.UNAVAILABLE && code !== grpc.status.RESOURCE_EXHAUSTED)) return result;
      if (overReceiveLimit(result.err)) return result; // the same message is refused again
      let sleepMs = Math.random() * Math.min(2000, 100 * 2 ** (attempt - 1));
      const hint = retryHintSeconds(result.err);
      if (hint !== null && hint * 1000 > sleepMs) sleepMs = hint * 1000;
      if (Date.now() - start + sleepMs > 5000 || deadline - Date.now() <= sleepMs) return result;
      await new Promise((resolve) => setTimeout(resolve, sleepMs));
    }
  }

  /** handle answers one request, noting in outcome what the access log reports. */
  async function handle(req, res, outcome) {
    const requestId = crypto.randomUUID();
    // The deadline covers the whole request from its arrival: the body read, Verify, onEvent.
    const deadline = Date.now() + deadlineMs;
    // The routes are matched against the path and query, an absolute-form target's too (a
    // server must take that form, RFC 9112 3.2.2), as net/http does in the Go edge.
    const target = splitTarget(req.url);
    if (HEALTH.test(target.pathQuery)) {
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        // As the Go edge's ServeMux answers "GET /healthz" for another method.
        answerUnread(req, res, 405, 'Method Not Allowed\n', { Allow: 'GET, HEAD' });
        return;
      }
      // As the Go edge's: the process serves HTTP (a load balancer's check).
      req.resume();
      res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': 3 });
      res.end('ok\n');
      return;
    }
    const match = ROUTE.exec(target.pathQuery);
    // A dot segment ("/hooks/." or "/hooks/..") is an unclean path, which the Go edge answers
    // 404 rather than have ServeMux redirect to the cleaned one ("%2E" is no dot segment).
    if (!match || match[1] === '.' || match[1] === '..') {
      // The Go edge's ServeMux answer for a path no route takes.
      answerUnread(req, res, 404, '404 page not found\n');
      return;
    }
    let endpointId = null;
    try {
      endpointId = decodeURIComponent(match[1]);
    } catch { /* not percent-encoded UTF-8: no endpoint has such an id */ }
    outcome.endpoint = endpointId ?? match[1];
    if (endpointId === null || !ENDPOINT_ID.test(endpointId)) {
      // The answer hookverify gives an unknown endpoint, without a call.
      answerUnread(req, res, 404, { status: 'rejected', reason: 'unknown_endpoint' });
      return;
    }

    // The headers are checked before the body is read: a request refused for its headers
    // would otherwise keep the provider (or anyone) uploading up to maxBodyBytes, or holding the
    // connection until the deadline, for an answer that never depended on the body.
    const headers = rawHeaderFields(req.rawHeaders);
    if (headers === null) {
      log('warn', 'a header value is not valid UTF-8; request not forwarded', { request_id: requestId, endpoint: endpointId });
      answerUnread(req, res, 400, { status: 'rejected', reason: 'unreadable_request' });
      return;
    }
    // The Host value as forwarded (its received bytes as UTF-8), not req.headers.host, which
    // Node decoded as latin1: the URL must carry the bytes the provider sent, as the Host
    // header does. (Node refuses a request line with bytes outside ASCII: req.url is ASCII.)
    // Without publicBaseUrl none (HTTP/1.0) or an empty one leaves no URL to forward, and is
    // refused as the Go edge does; two Host lines must get 400 (RFC 9110 7.2), as Go's net/http
    // answers them, whichever one would make the URL.
    // An absolute-form target is forwarded as received, as the Go edge does (its authority,
    // not the Host header, names the host: RFC 9112 3.2.2), or with publicBaseUrl its path and
    // query after the base; one of a scheme other than http(s) makes no URL to forward.
    const hosts = headers.filter((f) => f.name.toLowerCase() === 'host').map((f) => f.value);
    const host = target.scheme !== null ? target.authority : hosts[0] ?? '';
    let url;
    if (target.scheme === null) url = (base ?? `${scheme(req)}://${host}`) + req.url;
    else url = base ? base + target.pathQuery : req.url;
    if (target.scheme !== null && hosts.length <= 1) {
      // A server must ignore the Host header of an absolute-form request and take the target's
      // authority (RFC 9112 3.2.2), as Go's net/http does (r.Host): forwarded as the Host, so
      // the stored delivery names the host of its URL, in the header's place, or first when
      // there is none (HTTP/1.0).
      // Its host[:port] only, as Go's URL.Host: userinfo (a credential, with publicBaseUrl
      // taken, not refused) is not forwarded.
      const authority = target.authority.slice(target.authority.lastIndexOf('@') + 1);
      const at = headers.findIndex((f) => f.name.toLowerCase() === 'host');
      if (at >= 0) headers[at] = { name: headers[at].name, value: authority };
      else headers.unshift({ name: 'Host', value: authority });
    }
    let beyond;
    if (target.scheme !== null && target.scheme !== 'http' && target.scheme !== 'https') beyond = 'a request target that is neither a path nor an http(s) URL';
    else beyond = hosts.length > 1 ? 'more than one Host header' : beyondServerLimits(headers, url, base ? null : host);
    if (beyond) {
      // hookverify refuses it (INVALID_ARGUMENT) whatever it holds: a 500 would have the
      // provider retry it for ever. As the Go handler does, 400 without a call.
      log('warn', `${beyond}; request not forwarded`, { request_id: requestId, endpoint: endpointId });
      answerUnread(req, res, 400, { status: 'rejected', reason: 'unreadable_request' });
      return;
    }

    // A body declared larger than the limit is refused before it is read, as the Go handler
    // does: reading up to the limit first would keep the provider uploading for nothing, up
    // to the deadline for a slow one, and then answer 503 (retry) instead of 413.
    const declared = req.headers['content-length'];
    let body = declared !== undefined && /^\d+$/.test(declared) && Number(declared) > maxBodyBytes ? null : undefined;
    // The request is held from here to its answer (onEvent included): its headers, URL and
    // the first RESERVED_AHEAD bytes of its declared body are reserved now, the rest of the body
    // as it arrives. A Content-Length is a claim anyone can make: reserved whole, a few clients
    // announcing 32 MiB and sending nothing would hold the whole bound until requestTimeoutMs.
    const hold = { n: 0 };
    whenEnded(req, res, () => {
      bytesHeld -= hold.n;
      hold.n = 0;
    });
    let ahead = body === undefined && declared !== undefined && /^\d+$/.test(declared) ? Math.min(Number(declared), RESERVED_AHEAD) : 0;
    const headBytes = url.length + headers.reduce((n, f) => n + f.name.length + f.value.length, 0);
    if (!takeBytes(hold, headBytes + ahead)) body = FULL;
    const takeBody = (n) => {
      const more = n - ahead;
      ahead = Math.max(ahead - n, 0);
      return more <= 0 || takeBytes(hold, more);
    };
    try {
      if (body === undefined) {
        if (awaitingContinue.has(req)) res.writeContinue(); // the provider may send the body now
        body = await within(readBody(req, maxBodyBytes, takeBody), deadline);
      }
    } catch (err) {
      // The provider went away mid-body; there is nobody to answer.
      log('warn', 'reading the request body failed', { request_id: requestId, endpoint: endpointId, error: err.message });
      res.destroy();
      return;
    }
    if (body === TIMED_OUT) {
      // A slow upload is transient, and many providers never retry a 4xx: 503, then drop the
      // connection instead of waiting for the rest of the body.
      log('warn', 'the request body did not arrive within the deadline; asking the provider to retry', {
        request_id: requestId, endpoint: endpointId,
      });
      sendJSON(res, 503, { status: 'unavailable' }, { 'Retry-After': String(wholeSeconds(retryAfterSeconds)), Connection: 'close' });
      res.on('finish', () => req.destroy());
      return;
    }
    if (body === FULL) {
      // Logged at most once per 10 s: a flood of large requests would flood the log too.
      if (Date.now() - fullLoggedAt >= 10000) {
        log('warn', 'holding the bound of request bytes at once; asking the provider to retry', {
          request_id: requestId, endpoint: endpointId, max_bytes_in_flight: maxBytesInFlight, not_logged_since_last: fullNotLogged,
        });
        fullLoggedAt = Date.now();
        fullNotLogged = 0;
      } else {
        fullNotLogged++;
      }
      answerUnread(req, res, 503, { status: 'unavailable' }, { 'Retry-After': String(wholeSeconds(retryAfterSeconds)) });
      return;
    }
    if (body === null) {
      // Answer, then drop the connection instead of reading the rest of an oversized body.
      sendJSON(res, 413, { status: 'rejected', reason: 'body_too_large' }, { Connection: 'close' });
      res.on('finish', () => req.destroy());
      return;
    }

    const request = {
      endpoint_id: endpointId,
      body,
      headers: withoutHopByHop(headers),
      method: req.method,
      url,
    };

    const called = performance.now();
    const { err, resp } = await verify(request, deadline);
    outcome.verifierMs = msSince(called);
    outcome.grpcCode = err ? CODE_NAMES[err.code] ?? String(err.code) : 'OK';
    outcome.response = resp;
    if (err) {
      const code = outcome.grpcCode;
      if (overReceiveLimit(err)) {
        // Not backpressure (that carries RetryInfo) but a message over hookverify's receive
        // limit (verifier.proto): a 503 would have the provider send it again for days.
        log('warn', 'the request is larger than hookverify takes; answering 413', {
          request_id: requestId, endpoint: endpointId, grpc_code: code, detail: err.details,
        });
        sendJSON(res, 413, { status: 'rejected', reason: 'body_too_large' });
      } else if (RETRYABLE.has(err.code)) {
        const retryAfter = retryAfterFor(err, retryAfterSeconds);
        log('warn', 'hookverify unavailable; asking the provider to retry', {
          request_id: requestId, endpoint: endpointId, grpc_code: code, detail: err.details, retry_after: retryAfter,
        });
        sendJSON(res, 503, { status: 'unavailable' }, { 'Retry-After': String(retryAfter) });
      } else {
        // INVALID_ARGUMENT, FAILED_PRECONDITION, INTERNAL, UNIMPLEMENTED, UNAUTHENTICATED (no
        // or a bad token), PERMISSION_DENIED (a token without this endpoint in its scopes), ...:
        // the edge or hookverify is misconfigured. 500 keeps the provider retrying until it is
        // fixed. err.details is the server's status message, which never quotes a token.
        log('error', 'hookverify refused the call; edge or server misconfigured', {
          request_id: requestId, endpoint: endpointId, grpc_code: code, detail: err.details,
        });
        sendJSON(res, 500, { status: 'error' });
      }
      return;
    }

    if (onEvent && resp && (resp.verdict === 'VERDICT_ACCEPTED' || resp.verdict === 'VERDICT_DUPLICATE')) {
      let failure = null;
      try {
        // Bounded by what is left of the request's deadline: a hand-off that hangs must not
        // hold the provider past its own timeout.
        if (await within(Promise.resolve().then(() => onEvent({ response: resp, request })), deadline) === TIMED_OUT) {
          failure = { message: 'not done within the request\'s deadline' };
        }
      } catch (hookErr) {
        failure = { message: hookErr && hookErr.message };
      }
      if (failure !== null) {
        log('error', 'handing the event downstream failed; asking the provider to retry', {
          request_id: requestId, endpoint: endpointId, verdict: resp.verdict,
          operation_key: resp.operation_key, error: failure.message,
        });
        sendJSON(res, 503, { status: 'unavailable' }, { 'Retry-After': String(wholeSeconds(retryAfterSeconds)) });
        return;
      }
    }
    writeReply(res, resp, { requestId, endpointId, log });
  }

  /**
   * shutdown stops taking deliveries and lets the ones in flight finish, as the Go edge's
   * http.Server.Shutdown does: it stops listening, closes idle connections, and answers the
   * requests in flight with Connection: close, so that their connections end with them. Node's
   * server.close() alone does not: a busy keep-alive connection stays open and goes on serving
   * whatever the provider sends on it next, past the point where the process exits. After
   * graceMs (default: the deadline and 2 s, by which every request has been answered) the
   * remaining connections are closed. Resolves true when all ended in time, false otherwise.
   */
  server.shutdown = (graceMs = deadlineMs + 2000) => new Promise((resolve) => {
    closing = true;
    for (const res of inFlight) if (!res.headersSent) res.setHeader('Connection', 'close');
    const timer = setTimeout(() => {
      server.closeAllConnections();
      resolve(false);
    }, graceMs);
    server.close(() => {
      clearTimeout(timer);
      resolve(true);
    });
    server.closeIdleConnections();
  });

  if (ownClient) server.on('close', () => clients.close());
  return server;
}

/**
 * limitConnections bounds the connections server serves at once to max, as the Go edge's
 * --max-connections does (internal/cli/edgeconns.go). Node's server.maxConnections closes a new
 * connection past the bound as it arrives: keep-alive connections idle between requests would
 * then hold every slot for the whole idle timeout (60 s), and anyone could keep every provider
 * out with connections that each sent one request and then nothing. So, as the Go edge does, a
 * new connection at the bound takes the slot of the connection idle the longest, closing it
 * (as its idle timeout would; HTTP clients expect it), and is itself closed as it arrives (the
 * provider retries) only when none is idle. A connection reading or answering a request is
 * never closed.
 *
 * Idle means: every request received on it answered (its response ended), and no byte of a
 * next one parsed. Node tells of no next request before its headers have all arrived (its
 * parser reads the socket in C++), but the parser knows: its duration() is 0 from the end of
 * one request to the first byte of the next, and counts from the connection's start before its
 * first (so a new connection is not idle, as in the Go edge; headersTimeoutMs bounds it). The
 * check and the close run in one JavaScript turn, in which the parser reads nothing: a
 * connection on which Node has read a byte of a next request is never chosen. Bytes still in
 * the kernel's buffer may arrive as it closes: the race every idle timeout has, which clients of
 * keep-alive connections retry.
 *
 * Returns {requestStarted(socket), requestEnded(socket)}, to be told of each request.
 */
// IDLE_GRACE_MS is how long a connection must have been idle before a new one may take its
// slot, as the Go edge's edgeIdleGrace.
const IDLE_GRACE_MS = 1000;

function limitConnections(server, max, log) {
  const open = new Set();
  // The connections whose requests have all ended, each with when it became idle, the longest
  // idle first (a Map keeps the order of insertion; one that becomes idle again goes last).
  const idle = new Map();
  // The requests received on each connection whose response has not ended.
  const pending = new WeakMap();
  /** closeIdlest closes the connection idle the longest, if any, and reports whether it did. */
  const closeIdlest = () => {
    for (const [socket, since] of idle) {
      // Idle for less than the grace: so are all after it. A client sending deliveries one
      // after another has its next request on the way a round trip after each answer.
      if (Date.now() - since < IDLE_GRACE_MS) return false;
      // Reading a next request (or paused by Node under a client's pipelined requests): not
      // idle, but left in the set: its 'request' removes it, its timeout closes it.
      if (typeof socket.parser?.duration !== 'function' || socket.parser.duration() !== 0 || socket.isPaused()) continue;
      idle.delete(socket);
      open.delete(socket);
      socket.destroy();
      return true;
    }
    return false;
  };
  // Each said at most once per 10 s, with the number of times not said since the last line.
  const limited = (level, msg) => {
    let loggedAt = 0;
    let notLogged = 0;
    return () => {
      if (Date.now() - loggedAt < 10000) {
        notLogged++;
        return;
      }
      log(level, msg, { max_connections: max, not_logged_since_last: notLogged });
      loggedAt = Date.now();
      notLogged = 0;
    };
  };
  // The Go edge counts the first in hookverify_edge_idle_connections_closed_total (the Node edge
  // has no metrics): a close its idle timeout would have made anyway, so not a warning.
  const closedIdle = limited('info', 'closed idle keep-alive connections at maxConnections to accept new ones');
  const dropped = limited('warn', 'holding maxConnections connections open, none idle for 1 s; closing new ones (the provider retries)');
  // Node's own listener, registered when the server was created, runs first: the socket has
  // its parser.
  server.on('connection', (socket) => {
    if (open.size >= max) {
      if (closeIdlest()) {
        closedIdle();
      } else {
        socket.destroy();
        dropped();
        return;
      }
    }
    open.add(socket);
    socket.once('close', () => {
      open.delete(socket);
      idle.delete(socket);
    });
  });
  return {
    requestStarted(socket) {
      pending.set(socket, (pending.get(socket) ?? 0) + 1);
      idle.delete(socket);
    },
    requestEnded(socket) {
      const n = pending.get(socket) - 1;
      pending.set(socket, n);
      if (n === 0 && !socket.destroyed && open.has(socket)) {
        idle.delete(socket);
        idle.set(socket, Date.now());
      }
    },
  };
}

/**
 * writeReply sends hookverify's HttpReply: its status, its headers (order and repeats kept), its
 * body. Node writes header strings as latin1, one byte per character, so each value (a UTF-8
 * protobuf string) goes as the latin1 string of its UTF-8 bytes: the provider receives those
 * bytes, and a handshake echoing a request header round-trips byte for byte.
 */
function writeReply(res, resp, { requestId, endpointId, log }) {
  const reply = resp && resp.reply;
  const status = reply ? reply.status : 0;
  if (!reply || !Number.isInteger(status) || status < 200 || status > 599) {
    log('error', 'hookverify answered without a usable reply', {
      request_id: requestId, endpoint: endpointId, verdict: resp && resp.verdict, status,
    });
    sendJSON(res, 500, { status: 'error' });
    return;
  }
  const body = reply.body || Buffer.alloc(0);
  const flat = [];
  for (const h of reply.headers || []) {
    // As the Go edge (client.Handler's replyFields): Content-Length and the hop-by-hop fields
    // are the edge's own to set, and a field HTTP cannot carry (a control character in its
    // value) is left out rather than fail the answer, which every retry would fail again.
    const name = h.name.toLowerCase();
    if (name === 'content-length' || HOP_BY_HOP.has(name)) continue;
    const value = Buffer.from(h.value, 'utf8').toString('latin1');
    try {
      http.validateHeaderName(h.name);
      http.validateHeaderValue(h.name, value);
    } catch {
      continue;
    }
    flat.push(h.name, value);
  }
  // A server must not send Content-Length with a 204 (RFC 9110 8.6), nor Node a body.
  if (status !== 204) flat.push('Content-Length', String(body.length));
  try {
    res.writeHead(status, flat);
  } catch (err) {
    // An invalid header name or value in the reply: answer 500 so the provider retries.
    log('error', 'hookverify reply has an invalid header', { request_id: requestId, endpoint: endpointId, error: err.message });
    res.removeHeader('Content-Length');
    sendJSON(res, 500, { status: 'error' });
    return;
  }
  res.end(body);
}

module.exports = {
  createEdge, loadHookverify, newVerifierClient, rawHeaderFields, retryDelaySeconds, isLoopback,
  MAX_BODY_BYTES, MAX_BYTES_IN_FLIGHT, MAX_CONNECTIONS, MAX_RETRY_AFTER_SECONDS,
  HealthWatchedSubchannel, // for its tests
};

if (require.main === module) {
  const port = Number(process.env.PORT || 8080);
  // LOG_LEVEL as the Go edge's --log-level (warn turns the access log off).
  const log = leveledLog(process.env.LOG_LEVEL || 'info');
  // A timeout from the environment, in ms (createEdge refuses one that is not positive).
  const envMs = (name) => (process.env[name] ? Number(process.env[name]) : undefined);
  const tlsFiles = {
    ca: process.env.HOOKVERIFY_TLS_CA || undefined,
    cert: process.env.HOOKVERIFY_TLS_CERT || undefined,
    key: process.env.HOOKVERIFY_TLS_KEY || undefined,
  };
  const useTLS = process.env.HOOKVERIFY_TLS === '1' || Object.values(tlsFiles).some(Boolean);
  // The token comes from $HOOKVERIFY_TOKEN (createEdge's default); it is never logged.
  const edge = createEdge({
    verifierAddr: process.env.HOOKVERIFY_ADDR || '127.0.0.1:7700',
    publicBaseUrl: process.env.PUBLIC_BASE_URL || undefined,
    trustForwardedProto: process.env.TRUST_FORWARDED_PROTO === '1',
    tls: useTLS ? tlsFiles : undefined,
    headersTimeoutMs: envMs('HEADERS_TIMEOUT_MS'),
    requestTimeoutMs: envMs('REQUEST_TIMEOUT_MS'),
    idleTimeoutMs: envMs('IDLE_TIMEOUT_MS'),
    maxConnections: process.env.MAX_CONNECTIONS ? Number(process.env.MAX_CONNECTIONS) : undefined,
    log,
  });
  edge.listen(port, process.env.HOST || undefined, () => {
    const addr = edge.address();
    log('info', 'hookverify node edge listening', {
      addr: `${addr.address}:${addr.port}`,
      hookverify: process.env.HOOKVERIFY_ADDR || '127.0.0.1:7700',
      public_base_url: process.env.PUBLIC_BASE_URL || null, // createEdge refused one with credentials
      trust_forwarded_proto: process.env.TRUST_FORWARDED_PROTO === '1',
      tls: useTLS,
      token: Boolean(process.env.HOOKVERIFY_TOKEN),
    });
  });
  let stopping = false;
  const stop = (signal) => {
    if (stopping) return;
    stopping = true;
    log('info', 'shutting down', { signal });
    // Stop accepting; let in-flight deliveries finish (bounded by the deadline), then exit.
    edge.shutdown().then((clean) => {
      if (!clean) log('warn', 'closed the connections still open at the end of the shutdown grace period', {});
      process.exit(0);
    });
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
