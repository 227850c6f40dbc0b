// Package server implements hookverify's gRPC services: VerifierService (authenticate, claim,
// store, answer), AdminService (endpoints and secrets), InboxService, TokenService (callers' API
// tokens), plus health and reflection. With Options.Auth set, an interceptor authenticates every
// caller and authorizes each call by the table in authz.go. Handlers are thin: protocols live in
// server/protocol, persistence behind storage.Store.
package server
