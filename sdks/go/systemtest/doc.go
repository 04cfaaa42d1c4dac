// Package systemtest holds the Go SDK's tests against a real Motor: run
// them with sdks/go/test, which starts one with sdks/motor-sandbox. It is
// a module of its own so that the Postgres driver the inbox tests use
// never becomes a dependency of the SDK.
package systemtest
