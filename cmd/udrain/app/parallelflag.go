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
