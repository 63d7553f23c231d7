// Command stub-udrain stands in for udrain in the tests of upgrade.sh. It
// appends its arguments, one invocation per line, to $STUB_LOG, and exits
// with the code the test chose:
//
//   - rollout: the next of the comma-separated codes in
//     $STUB_ROLLOUT_CODES (the last one repeats);
//   - wait-healthy: $STUB_WAIT_CODE (default 0);
//   - audit: prints "AUDIT REPORT" and exits 4.
package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

func main() {
	args := os.Args[1:]
	logPath := os.Getenv("STUB_LOG")
	prev, _ := os.ReadFile(logPath)
	f, err := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "stub-udrain:", err)
		os.Exit(99)
	}
	fmt.Fprintln(f, strings.Join(args, " "))
	f.Close()
	switch {
	case slices.Contains(args, "rollout"):
		n := 0 // earlier rollout calls
		for _, line := range strings.Split(string(prev), "\n") {
			if slices.Contains(strings.Fields(line), "rollout") {
				n++
			}
		}
		codes := strings.Split(os.Getenv("STUB_ROLLOUT_CODES"), ",")
		code, _ := strconv.Atoi(codes[min(n, len(codes)-1)])
		fmt.Printf("rollout attempt %d: exit %d\n", n+1, code)
		os.Exit(code)
	case slices.Contains(args, "wait-healthy"):
		code, _ := strconv.Atoi(os.Getenv("STUB_WAIT_CODE"))
		os.Exit(code)
	case slices.Contains(args, "audit"):
		fmt.Println("AUDIT REPORT: 2 errors")
		os.Exit(4)
	}
	fmt.Fprintln(os.Stderr, "stub-udrain: unexpected command line", args)
	os.Exit(98)
}
