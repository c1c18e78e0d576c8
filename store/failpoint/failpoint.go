// Package failpoint is the store's seam for failure injection in tests: a test arms a named step on a
// context, and the store (store/postgres, and the nightly reviewer between its claim and its
// transaction) fails when its work reaches that step, inside the open transaction. It is context
// scoped, so parallel tests never see each other's failpoints, and it costs one map lookup when
// unarmed. It imports nothing of the project; nothing arms a failpoint outside tests.
package failpoint

import (
	"context"
	"fmt"
)

type key struct{}

// ErrInjected is the error an armed failpoint returns.
var ErrInjected = fmt.Errorf("failpoint: injected failure")

// Arm returns a context on which Check(step) fails with ErrInjected.
func Arm(ctx context.Context, step string) context.Context {
	steps := map[string]bool{step: true}
	if old, ok := ctx.Value(key{}).(map[string]bool); ok {
		for s := range old {
			steps[s] = true
		}
	}
	return context.WithValue(ctx, key{}, steps)
}

// Check returns ErrInjected, wrapped with the step name, when step is armed on ctx.
func Check(ctx context.Context, step string) error {
	if steps, ok := ctx.Value(key{}).(map[string]bool); ok && steps[step] {
		return fmt.Errorf("%w at %s", ErrInjected, step)
	}
	return nil
}

// Armed reports whether any failpoint is armed on ctx.
func Armed(ctx context.Context) bool {
	steps, ok := ctx.Value(key{}).(map[string]bool)
	return ok && len(steps) > 0
}
