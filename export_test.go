package densemem

// PlaceUnderLocksOnly makes c place every Remember under its locks (IntakeLock, KeysLock,
// WriteSetApply), never optimistically: the reference the optimistic path is tested against.
func PlaceUnderLocksOnly(c *Client) { c.lockedOnly = true }
