// HealthWatchedSubchannel under reconnects, with a stand-in for grpc-js's subchannel and for the
// health watch: what a watch of an earlier connection says must not count for a later one.
'use strict';

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { EventEmitter } = require('node:events');
const grpc = require('@grpc/grpc-js');

const { HealthWatchedSubchannel } = require('../edge.js');

const SERVING = Buffer.from([0x08, 0x01]);
const { READY, IDLE } = grpc.connectivityState;

/** fakeSubchannel is the part of a grpc-js subchannel HealthWatchedSubchannel uses. */
function fakeSubchannel() {
  const listeners = new Set();
  let state = IDLE;
  return {
    getConnectivityState: () => state,
    addConnectivityStateListener: (l) => listeners.add(l),
    removeConnectivityStateListener: (l) => listeners.delete(l),
    addHealthStateWatcher: () => {},
    isHealthy: () => true,
    getChannel: () => ({}),
    set(next) {
      const previous = state;
      state = next;
      for (const l of [...listeners]) l(this, previous, next);
    },
  };
}

// TestLateAnswerOfAnEndedWatch: a SERVING answer that grpc-js delivers after the connection
// dropped (the message was in flight, or still going through the call's filters, when the watch
// was cancelled) was applied: the instance counted as healthy on its next connection before that
// connection's own watch answered, and got calls while still starting (NOT_SERVING).
test('a SERVING answer from a cancelled watch does not count for the next connection', () => {
  const child = fakeSubchannel();
  const sub = new HealthWatchedSubchannel(child);
  const calls = [];
  sub.health = {
    Watch: () => {
      const call = new EventEmitter();
      call.cancel = () => { call.cancelled = true; };
      calls.push(call);
      return call;
    },
  };
  child.set(READY);
  assert.equal(calls.length, 1);
  calls[0].emit('data', SERVING);
  assert.equal(sub.isHealthy(), true);

  child.set(IDLE); // the connection dropped: the watch is cancelled
  assert.equal(calls[0].cancelled, true);
  assert.equal(sub.isHealthy(), false);
  calls[0].emit('data', SERVING); // delivered late, after the cancel
  calls[0].emit('status', { code: grpc.status.CANCELLED });

  child.set(READY); // reconnected: a new watch, not answered yet
  assert.equal(calls.length, 2);
  assert.equal(sub.isHealthy(), false, 'healthy on a new connection before its watch answered');
  calls[1].emit('data', SERVING);
  assert.equal(sub.isHealthy(), true);
  sub.destroy();
});
