package benchload

// Verify exposes verify to the external tests.
var Verify = verify
