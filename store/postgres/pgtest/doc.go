// Package pgtest gives tests of any package a fresh PostgreSQL database
// (NewDatabase) or schema (NewSchema) on the test server named by the
// WEFT_TEST_POSTGRES variable, dropped when the test ends. A test that asks
// for one while the variable is unset is skipped, with a message saying how
// to start a server:
//
//	export WEFT_TEST_POSTGRES=$(scripts/pg-test.sh start /tmp/pg)
//	go test ./store/postgres/ ./runtime/ ./cmd/weft/
package pgtest
