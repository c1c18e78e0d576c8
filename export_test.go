package densemem

import "github.com/densemem/densemem/internal/nightly"

// ReviewUnderLocksOnly makes c's nightly reviewer review every case under its locks (KeysLock,
// WriteSetApply), never planned from the batch's read: the reference the fenced way is tested
// against.
func ReviewUnderLocksOnly(c *Client) { c.lockedOnly = true }

// SetNightlyHooks sets the test seams of c's nightly reviewer.
func SetNightlyHooks(c *Client, h *nightly.Hooks) { c.nightlyHooks = h }
