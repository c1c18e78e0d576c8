package identity

import "strings"

const crockford = "0123456789abcdefghjkmnpqrstvwxyz"

// FormatID is the library's identifier layout: prefix, an underscore, and 26 lower-case Crockford
// base32 characters encoding 128 bits, namely 48 bits of Unix milliseconds, a 32-bit sequence and 48
// further bits (tail). IDs of one prefix therefore sort by time, then by sequence.
func FormatID(prefix string, ms int64, seq uint32, tail [6]byte) string {
	var raw [16]byte
	for i := range 6 {
		raw[i] = byte(ms >> (40 - 8*i))
	}
	raw[6], raw[7], raw[8], raw[9] = byte(seq>>24), byte(seq>>16), byte(seq>>8), byte(seq)
	copy(raw[10:], tail[:])
	var b strings.Builder
	b.Grow(len(prefix) + 27)
	b.WriteString(prefix)
	b.WriteByte('_')
	var acc uint32
	bits := 0
	for _, x := range raw {
		acc = acc<<8 | uint32(x)
		bits += 8
		for bits >= 5 {
			bits -= 5
			b.WriteByte(crockford[(acc>>bits)&31])
		}
	}
	if bits > 0 {
		b.WriteByte(crockford[(acc<<(5-bits))&31])
	}
	return b.String()
}
