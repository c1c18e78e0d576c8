package densemem

import "github.com/densemem/densemem/internal/nightly"

// PlaceUnderLocksOnly makes c place every Remember under its locks (IntakeLock, KeysLock,
// WriteSetApply), never optimistically: the reference the optimistic path is tested against.
func PlaceUnderLocksOnly(c *Client) { c.lockedOnly = true }

// ReviewUnderLocksOnly makes c's nightly reviewer review every case under its locks (KeysLock,
// WriteSetApply), never planned from the batch's read: the reference the fenced way is tested
// against.
func ReviewUnderLocksOnly(c *Client) { c.reviewLockedOnly = true }

// SetNightlyHooks sets the test seams of c's nightly reviewer.
func SetNightlyHooks(c *Client, h *nightly.Hooks) { c.nightlyHooks = h }
