package conflict

import (
	"testing"
	"time"
)

func TestFloorMetAndShortfall(t *testing.T) {
	for _, tc := range []struct {
		name          string
		f             Floor
		groups, total int
		met           bool
		short         int
	}{
		{"strong 4 of 5 (80%)", StrongFloor, 4, 5, true, 0},
		{"strong 3 of 3: too few groups", StrongFloor, 3, 3, false, 1},
		{"strong 3 of 4 (exactly 75%)", StrongFloor, 3, 4, false, 1},
		{"strong 4 of 6: 4+2 of 6+2 is exactly 75%", StrongFloor, 4, 6, false, 3},
		{"majority 2 of 3", MajorityFloor, 2, 3, true, 0},
		{"majority 2 of 4 (exactly 50%)", MajorityFloor, 2, 4, false, 1},
		{"majority 1 of 2", MajorityFloor, 1, 2, false, 1},
		{"majority 0 of 0", MajorityFloor, 0, 0, false, 2},
		{"a share of 1 is never met", Floor{Groups: 1, Share: 1}, 5, 5, false, -1},
	} {
		if got := tc.f.Met(tc.groups, tc.total); got != tc.met {
			t.Errorf("%s: Met = %v, want %v", tc.name, got, tc.met)
		}
		if got := tc.f.Shortfall(tc.groups, tc.total); got != tc.short {
			t.Errorf("%s: Shortfall = %d, want %d", tc.name, got, tc.short)
		}
	}
	due := time.Date(2026, 1, 8, 0, 0, 0, 0, time.UTC)
	if FloorAt(due.Add(-time.Nanosecond), due) != StrongFloor || FloorAt(due, due) != MajorityFloor {
		t.Error("FloorAt: want the strong floor before the deadline and the majority floor at it")
	}
}
