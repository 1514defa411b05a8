// Package schema is the host-side schema machinery of the Avro Value
// protocol, built on hamba/avro: it parses the packaged
// durable_workflow.protocol.Value schema, derives its Parsing Canonical Form
// and CRC-64-AVRO fingerprint, keeps an immutable schema per fingerprint, and
// resolves a writer schema against a reader schema (reference §1, Avro
// specification: schema resolution).
//
// The codec package does not need this package to encode or decode v1
// payloads: its hot path is standard library only and builds for wasip1.
// This package exists for what comes around it: checking that the constant
// codec.Fingerprint is the fingerprint of the packaged schema, naming the
// writer schema of a frame, and reading data written under a later version
// of the schema.
//
// # Schema versions
//
// V1 returns the only version released today. Lookup maps a frame's
// fingerprint to its schema and fails with unsupported_payload_schema for
// any other. A later version may only append new, uniquely named branch
// records to the union (reference §1.5); Parse accepts such a version, and
// Resolve reads data across versions by branch name: a newer reader reads v1
// data, and a v1 reader rejects a datum that uses a newer branch with
// unsupported_payload_schema.
//
// # hamba/avro
//
// hamba/avro parses the schema and prints its canonical form. Hamba wraps
// hamba's reflection codec for the Value schema; the project's tests use it
// as a differential oracle for the codec and its benchmark compares against
// it. hamba has no nesting limit, so bytes from untrusted sources reach it
// only through Hamba.Unmarshal, which validates them with the codec first.
// Resolve does not use hamba's schema resolution, which recurses without end
// on this recursive schema; it maps union indexes by branch name itself.
//
// # Example
//
//	s, err := schema.Lookup(codec.Fingerprint)
//	if err != nil {
//		return err // unsupported_payload_schema
//	}
//	v, err := schema.Resolve(s, schema.V1(), datum)
package schema
