package eviction

import (
	"context"

	"golang.org/x/sync/errgroup"
)

// forEachNode runs fn for every node name, at most limit at once, and
// returns the first error; once one fails, the calls not yet started see a
// cancelled context. A domain's node patches (cordon, upgraded mark,
// uncordon) are independent of each other: made one after another they
// cost a round trip each, ~3s per domain of 50 nodes on a loaded API
// server.
func forEachNode(ctx context.Context, limit int, names []string, fn func(ctx context.Context, i int, name string) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(limit)
	for i, name := range names {
		g.Go(func() error { return fn(gctx, i, name) })
	}
	return g.Wait()
}
