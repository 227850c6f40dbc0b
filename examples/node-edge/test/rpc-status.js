// Test helper: google.rpc.Status trailers with RetryInfo details, encoded by protobufjs (locked in
// package-lock.json as a dependency of @grpc/proto-loader), an implementation independent of
// the edge's hand-written decoder. The messages are declared here, as in google/rpc/*.proto and
// google/protobuf/{any,duration}.proto, because no .proto of google.rpc ships with the packages.
'use strict';

const grpc = require('@grpc/grpc-js');
const protobuf = require('protobufjs');

const { root } = protobuf.parse(`
syntax = "proto3";
package google.rpc;
message Status { int32 code = 1; string message = 2; repeated Any details = 3; }
message Any { string type_url = 1; bytes value = 2; }
message Duration { int64 seconds = 1; int32 nanos = 2; }
message RetryInfo { Duration retry_delay = 1; }
`);
const Status = root.lookupType('google.rpc.Status');
const RetryInfo = root.lookupType('google.rpc.RetryInfo');

/** any wraps an encoded message in a google.protobuf.Any. */
function any(typeUrl, value) {
  return { typeUrl, value };
}

/** retryInfo is an Any holding google.rpc.RetryInfo{retry_delay: {seconds, nanos}}. */
function retryInfo({ seconds = 0, nanos = 0 }) {
  return any('type.googleapis.com/google.rpc.RetryInfo', RetryInfo.encode({ retryDelay: { seconds, nanos } }).finish());
}

/** status encodes a google.rpc.Status. */
function status({ code, message = '', details = [] }) {
  return Buffer.from(Status.encode({ code, message, details }).finish());
}

/** trailer is the grpc.Metadata a server sends the encoded Status in. */
function trailer(statusBytes) {
  const md = new grpc.Metadata();
  md.set('grpc-status-details-bin', statusBytes);
  return md;
}

module.exports = { any, retryInfo, status, trailer };
