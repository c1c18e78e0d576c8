package densemem_test

import (
	"fmt"
	"testing"
	"time"
)

func TestZZDiagCalls(t *testing.T) {
	e := newEnv(t)
	for i := range 200 {
		e.rememberFresh(e.A, -1-i)
	}
	e.pool.Exec(e.ctx, "ANALYZE")
	snap := func() map[string][3]float64 {
		time.Sleep(2500 * time.Millisecond)
		out := map[string][3]float64{}
		rows, _ := e.pool.Query(e.ctx, "SELECT funcname, calls, total_time, self_time FROM pg_stat_user_functions")
		for rows.Next() {
			var f string
			var c int64
			var tt, st float64
			rows.Scan(&f, &c, &tt, &st)
			out[f] = [3]float64{float64(c), tt, st}
		}
		rows.Close()
		return out
	}
	before := snap()
	for i := range 100 {
		e.rememberFresh(e.A, i)
	}
	after := snap()
	for f, a := range after {
		b := before[f]
		if a[0]-b[0] > 0 {
			fmt.Printf("remember100 %s calls=%.0f total=%.1fms self=%.1fms\n", f, a[0]-b[0], a[1]-b[1], a[2]-b[2])
		}
	}
	before = after
	for i := range 100 {
		e.recall(e.B, fmt.Sprintf("env-%d deploy", -1-i), nil, nil)
	}
	after = snap()
	for f, a := range after {
		b := before[f]
		if a[0]-b[0] > 0 {
			fmt.Printf("recall100 %s calls=%.0f total=%.1fms self=%.1fms\n", f, a[0]-b[0], a[1]-b[1], a[2]-b[2])
		}
	}
}
