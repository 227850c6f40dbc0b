// Package server implements hookverify's gRPC services: VerifierService (authenticate, claim,
// store, answer) and AdminService (endpoints and secrets), plus health and reflection. Handlers
// are thin: protocols live in server/protocol, persistence behind storage.Store.
package server
