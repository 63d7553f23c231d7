package app

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/udrain/udrain/eviction"
)

// parallelFlag is --parallel: how many domains a rollout has in flight at
// once, a number or "auto" (eviction.RolloutOptions.Parallel).
type parallelFlag struct{ n int }

func (f *parallelFlag) String() string {
	switch f.n {
	case eviction.ParallelAuto:
		return "auto"
	case 0:
		return "1"
	}
	return strconv.Itoa(f.n)
}

func (f *parallelFlag) Set(s string) error {
	if strings.EqualFold(s, "auto") {
		f.n = eviction.ParallelAuto
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return fmt.Errorf("%q is not a number of domains: use 1 (one at a time), a larger number, or auto (as many as the budgets and the upgraded room allow)", s)
	}
	f.n = n
	return nil
}

func (f *parallelFlag) Type() string { return "N|auto" }

// add defines --parallel on cmd; what says what it sets.
func (f *parallelFlag) add(cmd *cobra.Command, what string) {
	cmd.Flags().Var(f, "parallel", what)
}

// inPlaceSteering settles --in-place against --parallel and --steering on
// cmd: it sets Strict steering unless --steering was given, and refuses,
// in terms of flags, what eviction.RolloutOptions.InPlace refuses.
func inPlaceSteering(cmd *cobra.Command, ro *eviction.RolloutOptions) error {
	if !ro.InPlace {
		return nil
	}
	if ro.Parallel == 0 || ro.Parallel == 1 {
		return usageErrorf("--in-place takes several domains at once: add --parallel auto or --parallel N (N above 1); one domain at a time never holds a domain back for room")
	}
	if !cmd.Flags().Changed("steering") {
		ro.Steering = eviction.SteerStrict
		return nil
	}
	if ro.Steering != eviction.SteerStrict {
		return usageErrorf("--in-place needs --steering %s (what it sets without --steering): with --steering %s a group that finds no upgraded room may land on a domain not upgraded yet and be disrupted again", eviction.SteerStrict, ro.Steering)
	}
	return nil
}
