module github.com/motor-whatsapp/motor/sdks/go/systemtest

go 1.19

require (
	github.com/lib/pq v1.10.7
	github.com/motor-whatsapp/motor/sdks/go v0.0.0
)

// The SDK under test, from this checkout.
replace github.com/motor-whatsapp/motor/sdks/go => ../

// The Postgres driver is a test dependency only (the SDK has none). The
// Go module proxy is not reachable from Motor's machines, so it comes
// from Debian's golang-github-lib-pq-dev (sdks/go/test installs it).
replace github.com/lib/pq => /usr/share/gocode/src/github.com/lib/pq
