package schema

import "encoding/binary"

// crc64Empty is the CRC-64-AVRO value of the empty input, the constant the
// Avro specification names EMPTY (Avro specification: schema fingerprints).
const crc64Empty uint64 = 0xc15d213aa4d7a795

// crc64Table holds the 256 precomputed steps of the Rabin fingerprint, built
// as the Avro specification describes: each entry shifts its byte through
// eight rounds, folding in EMPTY whenever the low bit is set.
var crc64Table = func() (t [256]uint64) {
	for i := range t {
		fp := uint64(i)
		for range 8 {
			fp = (fp >> 1) ^ (crc64Empty & -(fp & 1))
		}
		t[i] = fp
	}
	return t
}()

// CRC64Avro returns the CRC-64-AVRO (Rabin) fingerprint of data as a 64-bit
// integer (Avro specification: schema fingerprints). For a schema it is
// computed over the Parsing Canonical Form.
func CRC64Avro(data []byte) uint64 {
	fp := crc64Empty
	for _, b := range data {
		fp = (fp >> 8) ^ crc64Table[byte(fp)^b]
	}
	return fp
}

// FingerprintOf returns the 8 fingerprint bytes of a Parsing Canonical Form
// as a single-object frame carries them: CRC64Avro of the text, written
// little-endian (Avro specification: single-object encoding; reference §1.3).
// For schema v1 they are e2 a3 3d ff 55 80 22 37.
func FingerprintOf(canonicalForm string) [8]byte {
	var fp [8]byte
	binary.LittleEndian.PutUint64(fp[:], CRC64Avro([]byte(canonicalForm)))
	return fp
}
