package console

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/densemem/densemem"
)

// fixedClock is a clock the test moves.
type fixedClock struct{ at atomic.Pointer[time.Time] }

func (c *fixedClock) now() time.Time  { return *c.at.Load() }
func (c *fixedClock) set(t time.Time) { c.at.Store(&t) }

func TestSessionsExpireAndAreCapped(t *testing.T) {
	var clk fixedClock
	t0 := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	clk.set(t0)
	s := newSessions(time.Minute, 2, clk.now)
	p := densemem.HostPrincipal("tm_a")
	a, _ := s.open(p)
	clk.set(t0.Add(10 * time.Second))
	b, _ := s.open(p)
	clk.set(t0.Add(20 * time.Second))
	if _, ok := s.lookup(b); !ok { // b is now the most recently seen
		t.Fatal("a fresh session is unknown")
	}
	c, _ := s.open(p) // past the cap of 2: a, idle longest, goes
	if _, ok := s.lookup(a); ok {
		t.Error("the idlest session survived the cap")
	}
	if _, ok := s.lookup(c); !ok {
		t.Error("the new session is unknown")
	}
	clk.set(t0.Add(20*time.Second + time.Minute))
	if _, ok := s.lookup(b); ok {
		t.Error("a session idle for the timeout is still alive")
	}
	if got, ok := s.lookup("not a session"); ok || got != (densemem.Principal{}) {
		t.Error("an unknown cookie found a principal")
	}
}

// TestSessionsConcurrently opens, reads and closes sessions from many goroutines (run with -race).
func TestSessionsConcurrently(t *testing.T) {
	var clk fixedClock
	clk.set(time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC))
	s := newSessions(time.Hour, 50, clk.now)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			p := densemem.Principal{TeamID: "tm_a", ProfileID: densemem.ProfileID(string(rune('a' + i)))}
			for range 50 {
				v, err := s.open(p)
				if err != nil {
					t.Error(err)
					return
				}
				if got, ok := s.lookup(v); ok && got != p {
					t.Errorf("a session returned %+v, want %+v", got, p)
				}
				s.close(v)
			}
		})
	}
	wg.Wait()
	if n := len(s.byHash); n != 0 {
		t.Errorf("%d sessions left after every one closed", n)
	}
}
