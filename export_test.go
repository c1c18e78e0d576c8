package densemem

import "github.com/densemem/densemem/internal/nightly"

// PlaceUnderLocksOnly makes c place every Remember under its locks (IntakeLock, KeysLock,
// WriteSetApply), never optimistically: the reference the optimistic path is tested against.
func PlaceUnderLocksOnly(c *Client) { c.lockedOnly = true }

// PlaceReadingWholeKeys makes c's Remembers lock and read every relationship of their keys, closed
// history included, as before issue 21: the reference the live-only read is tested against.
func PlaceReadingWholeKeys(c *Client) { c.wholeKeys = true }

// PlaceReadingLiveKeysWhole makes c place every Remember under its locks reading its keys' live
// relationships whole, never narrowed by object: the reference the narrowed reads (decisions 145 and
// 155) are tested against.
func PlaceReadingLiveKeysWhole(c *Client) { c.lockedOnly, c.liveKeysWhole = true, true }

// ReviewUnderLocksOnly makes c's nightly reviewer review every case under its locks (KeysLock,
// WriteSetApply), never planned from the batch's read: the reference the fenced way is tested
// against.
func ReviewUnderLocksOnly(c *Client) { c.reviewLockedOnly = true }

// SetNightlyHooks sets the test seams of c's nightly reviewer.
func SetNightlyHooks(c *Client, h *nightly.Hooks) { c.nightlyHooks = h }
