// Command release builds udrain's release artefacts from the checkout it
// runs in, without Docker or a registry:
//
//	release image   the OCI image index (linux/amd64, linux/arm64) as an OCI
//	                layout and Docker archives, under _output/image
//	release plugin  the kubectl plugin archives and their krew manifest,
//	                under _output/plugin
//
// Both are reproducible: the same commit built with the same Go release
// gives the same bytes (dates are the commit's, owners fixed, no paths).
// They are `make image` and `make plugin` at the repository root.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	root := fs.String("root", "../..", "the udrain checkout")
	if len(args) == 0 {
		return fmt.Errorf("%w: release image|plugin [-root DIR]", errUsage)
	}
	what := args[0]
	if err := fs.Parse(args[1:]); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	abs, err := filepath.Abs(*root)
	if err != nil {
		return err
	}
	*root = abs
	var s Stamps
	logf := func(format string, a ...any) { fmt.Fprintf(os.Stderr, "release: "+format+"\n", a...) }
	s, err = readStamps(ctx, *root)
	if err != nil {
		return err
	}
	out := filepath.Join(*root, "_output")
	start := time.Now()
	switch what {
	case "image":
		b, err := buildImage(ctx, *root, filepath.Join(out, "bin"), filepath.Join(out, "image"), s, logf)
		if err != nil {
			return err
		}
		for _, p := range b.Platforms {
			logf("  %s %s (layer %.1f MB) %s", p.Platform, p.Digest, float64(p.LayerBytes)/1e6, filepath.Join(out, "image", p.Tarball))
		}
		logf("  OCI layout %s", filepath.Join(out, "image", b.Layout))
	case "plugin":
		p, err := buildPlugin(ctx, *root, filepath.Join(out, "bin"), filepath.Join(out, "plugin"), s)
		if err != nil {
			return err
		}
		logf("krew manifest %s", p)
	default:
		return fmt.Errorf("%w: unknown artefact %q: release image|plugin", errUsage, what)
	}
	logf("done in %.1fs", time.Since(start).Seconds())
	return nil
}
