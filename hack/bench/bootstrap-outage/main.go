// Command bootstrap-outage measures, side by side in one run, how quickly a
// waiting worker notices that its server is back after an outage, and how
// many requests it sends during the outage: bootstrap.WaitForServer with its
// defaults against a faithful Go re-implementation of the shell loop it
// replaces,
//
//	until curl -sf URL; do sleep 5; done
//
// Both kinds of client run concurrently against the same server on
// 127.0.0.1. The server refuses connections for the outage (optionally
// answering 503 during its last part, as a server does while it
// initialises), then answers 200. Client i of each kind starts at the same
// offset, i*stagger/clients, so the clients' phases cover a whole loop
// period and both kinds see the same outages.
//
// It prints one JSON line, then a table. Reproduce with:
//
//	go run ./hack/bench/bootstrap-outage -outage 30s -clients 20
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	"github.com/udrain/udrain/bootstrap"
)

// config is the command line.
type config struct {
	outage       time.Duration
	initializing time.Duration
	clients      int
	stagger      time.Duration
	loopSleep    time.Duration
	grace        time.Duration
	helperCap    time.Duration
}

func main() {
	var c config
	flag.DurationVar(&c.outage, "outage", 30*time.Second, "how long the server is down (refusing, then initialising)")
	flag.DurationVar(&c.initializing, "initializing", 0, "last part of the outage during which the server listens but answers 503")
	flag.IntVar(&c.clients, "clients", 20, "clients of each kind")
	flag.DurationVar(&c.stagger, "stagger", 5*time.Second, "client start offsets are spread over this span (default: one loop period)")
	flag.DurationVar(&c.loopSleep, "loop-sleep", 5*time.Second, "the shell loop's sleep")
	flag.DurationVar(&c.helperCap, "cap", 0, "the helper's Backoff.Cap (default: bootstrap.DefaultBackoff's); a larger cap trades notice time for fewer requests")
	flag.DurationVar(&c.grace, "grace", time.Minute, "how long after the outage clients may take before the run is abandoned")
	flag.Parse()
	if err := run(context.Background(), c, os.Stdout, commandLine()); err != nil {
		fmt.Fprintln(os.Stderr, "bootstrap-outage:", err)
		os.Exit(1)
	}
}

func commandLine() string {
	args := []string{"go run ./hack/bench/bootstrap-outage"}
	flag.Visit(func(f *flag.Flag) { args = append(args, fmt.Sprintf("-%s %s", f.Name, f.Value)) })
	return strings.Join(args, " ")
}

// clientRun is what one client did.
type clientRun struct {
	requestsDuringOutage int
	notice               time.Duration // from the server coming up to the client returning
}

// summary aggregates the runs of one kind of client.
type summary struct {
	NoticeMeanMS         float64 `json:"notice_mean_ms"`
	NoticeMedianMS       float64 `json:"notice_median_ms"`
	NoticeMaxMS          float64 `json:"notice_max_ms"`
	RequestsMean         float64 `json:"requests_during_outage_mean"`
	RequestsTotal        int     `json:"requests_during_outage_total"`
	ClientsThatSucceeded int     `json:"clients"`
}

// report is the JSON line.
type report struct {
	OutageS       float64 `json:"outage_s"`
	InitializingS float64 `json:"initializing_s"`
	LoopSleepS    float64 `json:"loop_sleep_s"`
	HelperCapS    float64 `json:"helper_backoff_cap_s"`
	Clients       int     `json:"clients_per_kind"`
	// Served503 counts the 503 answers of the initialising server, both
	// kinds of client together.
	Served503 int64   `json:"served_503"`
	Helper    summary `json:"helper"`
	Loop      summary `json:"sleep_loop"`
	// NoticeRatio is the loop's mean notice time over the helper's: how many
	// times faster the helper notices recovery.
	NoticeRatio float64 `json:"notice_ratio_loop_over_helper"`
	// RequestsRatio is the helper's mean request count during the outage
	// over the loop's: how many times more requests the helper sends.
	RequestsRatio float64 `json:"requests_ratio_helper_over_loop"`
	Command       string  `json:"command"`
}

func (c config) validate() error {
	switch {
	case c.outage <= 0:
		return errors.New("-outage must be positive")
	case c.initializing < 0 || c.initializing > c.outage:
		return errors.New("-initializing must be between 0 and -outage")
	case c.clients < 1:
		return errors.New("-clients must be at least 1")
	case c.stagger < 0 || c.stagger >= c.outage:
		return errors.New("-stagger must be at least 0 and shorter than -outage, so every client starts during the outage")
	case c.loopSleep <= 0:
		return errors.New("-loop-sleep must be positive")
	case c.helperCap < 0:
		return errors.New("-cap must not be negative")
	}
	return nil
}

func run(ctx context.Context, c config, out io.Writer, command string) error {
	if err := c.validate(); err != nil {
		return err
	}
	// A port that refuses connections until the server starts on it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := l.Addr().String()
	l.Close()
	url := "http://" + addr + "/healthz"

	var up atomic.Bool
	var served503 atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			served503.Add(1)
			http.Error(w, "initialising", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})}
	defer srv.Close()

	start := time.Now()
	upAt := start.Add(c.outage)
	ctx, cancel := context.WithDeadline(ctx, upAt.Add(c.grace))
	defer cancel()
	// The helpers' progress lines are not the point here.
	ctx = klog.NewContext(ctx, logr.Discard())

	serverErr := make(chan error, 1)
	go func() {
		time.Sleep(time.Until(upAt.Add(-c.initializing)))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			serverErr <- fmt.Errorf("re-listening on %s: %w", addr, err)
			cancel()
			return
		}
		// Serve at once: while initialising the server answers 503.
		go func() { _ = srv.Serve(l) }()
		time.Sleep(time.Until(upAt))
		up.Store(true)
	}()

	helpers := make([]clientRun, c.clients)
	loops := make([]clientRun, c.clients)
	errs := make([]error, 2*c.clients)
	var wg sync.WaitGroup
	for i := range c.clients {
		offset := time.Duration(i) * c.stagger / time.Duration(c.clients)
		wg.Go(func() {
			time.Sleep(time.Until(start.Add(offset)))
			helpers[i], errs[i] = runHelper(ctx, url, upAt, c.helperCap)
		})
		wg.Go(func() {
			time.Sleep(time.Until(start.Add(offset)))
			loops[i], errs[c.clients+i] = runLoop(ctx, url, upAt, c.loopSleep)
		})
	}
	wg.Wait()
	select {
	case err := <-serverErr:
		return err
	default:
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}

	r := report{
		OutageS:       c.outage.Seconds(),
		InitializingS: c.initializing.Seconds(),
		LoopSleepS:    c.loopSleep.Seconds(),
		HelperCapS:    helperCap(c).Seconds(),
		Clients:       c.clients,
		Served503:     served503.Load(),
		Helper:        summarize(helpers),
		Loop:          summarize(loops),
		Command:       command,
	}
	r.NoticeRatio = ratio(r.Loop.NoticeMeanMS, r.Helper.NoticeMeanMS)
	r.RequestsRatio = ratio(r.Helper.RequestsMean, r.Loop.RequestsMean)
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, string(line))
	writeTable(out, r)
	return nil
}

// runHelper waits with bootstrap.WaitForServer and its defaults, except
// for the backoff cap if one is given.
func runHelper(ctx context.Context, url string, upAt time.Time, backoffCap time.Duration) (clientRun, error) {
	var r clientRun
	opts := bootstrap.Options{
		OnAttempt: func(a bootstrap.Attempt) {
			if a.Err != nil && time.Now().Before(upAt) {
				r.requestsDuringOutage++
			}
		},
	}
	if backoffCap > 0 {
		opts.Backoff = bootstrap.DefaultBackoff()
		opts.Backoff.Cap = backoffCap
	}
	_, err := bootstrap.WaitForServer(ctx, url, opts)
	if err != nil {
		return r, fmt.Errorf("helper: %w", err)
	}
	r.notice = time.Since(upAt)
	return r, nil
}

// runLoop is `until curl -sf URL; do sleep 5; done`: one request per
// iteration on a fresh connection (a new curl process), success on a status
// below 400 without following redirects (-f without -L), no overall timeout
// (curl has none by default), then a fixed sleep. The process start of a
// real curl (a few milliseconds) is not modelled, which favours the loop.
func runLoop(ctx context.Context, url string, upAt time.Time, sleep time.Duration) (clientRun, error) {
	var r clientRun
	for {
		ok := curlSF(ctx, url)
		if ok {
			r.notice = time.Since(upAt)
			return r, nil
		}
		if time.Now().Before(upAt) {
			r.requestsDuringOutage++
		}
		select {
		case <-ctx.Done():
			return r, fmt.Errorf("sleep loop: %w", ctx.Err())
		case <-time.After(sleep):
		}
	}
}

// curlSF is one `curl -sf URL`: true if it would exit 0.
func curlSF(ctx context.Context, url string) bool {
	client := &http.Client{
		Transport:     &http.Transport{Proxy: http.ProxyFromEnvironment, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body) // curl reads (and with -s discards) the body
	return resp.StatusCode < 400
}

func helperCap(c config) time.Duration {
	if c.helperCap > 0 {
		return c.helperCap
	}
	return bootstrap.DefaultBackoff().Cap
}

func summarize(runs []clientRun) summary {
	var s summary
	notices := make([]time.Duration, 0, len(runs))
	var sum time.Duration
	for _, r := range runs {
		notices = append(notices, r.notice)
		sum += r.notice
		s.RequestsTotal += r.requestsDuringOutage
	}
	slices.Sort(notices)
	n := len(runs)
	s.ClientsThatSucceeded = n
	s.NoticeMeanMS = ms(sum / time.Duration(n))
	s.NoticeMaxMS = ms(notices[n-1])
	if n%2 == 1 {
		s.NoticeMedianMS = ms(notices[n/2])
	} else {
		s.NoticeMedianMS = ms((notices[n/2-1] + notices[n/2]) / 2)
	}
	s.RequestsMean = float64(s.RequestsTotal) / float64(n)
	return s
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func writeTable(out io.Writer, r report) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "outage %.0fs (503 for the last %.0fs), %d clients of each kind\n", r.OutageS, r.InitializingS, r.Clients)
	fmt.Fprintln(tw, "client\tnotice mean\tmedian\tmax\trequests during outage (mean per client)")
	for _, row := range []struct {
		name string
		s    summary
	}{{fmt.Sprintf("bootstrap.WaitForServer (cap %gs)", r.HelperCapS), r.Helper}, {fmt.Sprintf("until curl -sf; sleep %g", r.LoopSleepS), r.Loop}} {
		fmt.Fprintf(tw, "%s\t%.0fms\t%.0fms\t%.0fms\t%.1f\n", row.name, row.s.NoticeMeanMS, row.s.NoticeMedianMS, row.s.NoticeMaxMS, row.s.RequestsMean)
	}
	fmt.Fprintf(tw, "ratio\tloop/helper %.2fx\t\t\thelper/loop %.2fx\n", r.NoticeRatio, r.RequestsRatio)
	tw.Flush()
	fmt.Fprintln(out, "reproduce:", r.Command)
}
