package udrain_test

import (
	"context"
	"crypto/tls"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubectl/pkg/drain"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/bootstrap"
	"github.com/udrain/udrain/clusterinformers"
	"github.com/udrain/udrain/eviction"
	"github.com/udrain/udrain/kubeclient"
	"github.com/udrain/udrain/metrics"
	"github.com/udrain/udrain/readiness"
	"github.com/udrain/udrain/readiness/gate"
	"github.com/udrain/udrain/topology"
	"github.com/udrain/udrain/upgrade"
)

// The two forms of ConfigError.Field (see its documentation): a setting,
// package.Type.Field with fields of fields and slice elements as in Go,
// and an argument, package.Func(arg) or package.Type.Method(arg).
var (
	settingField  = regexp.MustCompile(`^([a-z][a-z0-9]*)\.([A-Z][A-Za-z0-9]*)((?:\.[A-Z][A-Za-z0-9]*(?:\[[0-9]+\])?)+)$`)
	argumentField = regexp.MustCompile(`^([a-z][a-z0-9]*)\.(?:([A-Z][A-Za-z0-9]*)\.)?([A-Z][A-Za-z0-9]*)\(([a-z][A-Za-z0-9]*)\)$`)
)

// packageDirs are the folders of the packages a Field may name, by the
// name code that imports them uses.
var packageDirs = map[string]string{
	"eviction":         "eviction",
	"readiness":        "readiness",
	"gate":             "readiness/gate",
	"bootstrap":        "bootstrap",
	"upgrade":          "upgrade",
	"metrics":          "metrics",
	"kubeclient":       "kubeclient",
	"clusterinformers": "clusterinformers",
}

// Every ConfigError of the module names what is at fault in one of the
// two forms, and the setting or argument it names exists under that name,
// so that a caller finds it in the package's documentation and a command
// line can map it to its flag.
func TestConfigErrorFieldsFollowTheConvention(t *testing.T) {
	ctx := t.Context()
	client := fake.NewClientset()
	drainer, err := eviction.New(client, eviction.Options{})
	if err != nil {
		t.Fatal(err)
	}
	scoped, err := eviction.New(client, eviction.Options{Namespace: "web"})
	if err != nil {
		t.Fatal(err)
	}
	reader, err := eviction.NewReader(client, eviction.Options{})
	if err != nil {
		t.Fatal(err)
	}
	newReader := func(opts eviction.Options) error {
		_, err := eviction.NewReader(client, opts)
		return err
	}
	checker, err := readiness.NewChecker([]readiness.Member{{Name: "a", Check: func(context.Context) error { return nil }}}, readiness.Options{})
	if err != nil {
		t.Fatal(err)
	}
	newDrainer := func(opts eviction.Options) error {
		_, err := eviction.New(client, opts)
		return err
	}
	newChecker := func(members []readiness.Member, opts readiness.Options) error {
		_, err := readiness.NewChecker(members, opts)
		return err
	}
	ok := func(context.Context) error { return nil }
	members := []readiness.Member{{Name: "a", Check: ok}}
	serve := func(opts readiness.ServeOptions) error {
		_, err := checker.NewServer(opts)
		return err
	}
	lws := func(opts readiness.LWSOptions) error {
		env := map[string]string{readiness.EnvLeaderAddress: "llm-0.llm.ns", readiness.EnvGroupSize: "1", readiness.EnvWorkerIndex: "0"}
		_, err := readiness.MembersFromLWSEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok }, opts)
		return err
	}
	newGate := func(opts gate.Options) error {
		_, err := gate.New(client, opts)
		return err
	}
	election := func(le gate.LeaderElection) error {
		if le.Namespace == "" {
			le.Namespace = "udrain"
		}
		return newGate(gate.Options{LeaderElection: &le})
	}
	waitServer := func(target string, opts bootstrap.Options) error {
		_, err := bootstrap.WaitForServer(ctx, target, opts)
		return err
	}
	rollout := func(opts eviction.RolloutOptions) error { return opts.Validate() }
	status := func(id string, opts eviction.RolloutOptions) error {
		opts.ID = id
		_, err := drainer.RolloutStatus(ctx, opts)
		return err
	}
	job := func(opts upgrade.JobOptions) error {
		_, err := upgrade.Job(client, opts)
		return err
	}
	template := func(edit func(*corev1.PodSpec)) upgrade.JobOptions {
		o := upgrade.JobOptions{RolloutID: "r", Template: jobTemplate()}
		if edit != nil {
			edit(&o.Template.Spec.Template.Spec)
		}
		return o
	}
	done := upgrade.Signal{Kind: upgrade.SignalLabel, Key: "example.com/done", Value: "1"}
	nodeLabel := func(opts upgrade.NodeLabelOptions) error {
		_, err := upgrade.NodeLabel(client, opts)
		return err
	}
	webhook := func(opts upgrade.WebhookOptions) error {
		_, err := upgrade.Webhook(opts)
		return err
	}
	missing := filepath.Join(t.TempDir(), "missing")

	for _, tc := range []struct {
		want string
		call func() error
	}{
		// eviction: the Drainer's options, its constructor and methods.
		{"eviction.New(client)", func() error { _, err := eviction.New(nil, eviction.Options{}); return err }},
		{"eviction.Options.Helper.Timeout", func() error { return newDrainer(eviction.Options{Helper: &drain.Helper{Timeout: -1}}) }},
		{"eviction.Options.Helper.SkipWaitForDeleteTimeoutSeconds", func() error {
			return newDrainer(eviction.Options{Helper: &drain.Helper{SkipWaitForDeleteTimeoutSeconds: -1}})
		}},
		{"eviction.Options.Helper.ChunkSize", func() error { return newDrainer(eviction.Options{Helper: &drain.Helper{ChunkSize: -1}}) }},
		{"eviction.Options.Helper.EvictErrorRetryDelay", func() error {
			return newDrainer(eviction.Options{Helper: &drain.Helper{EvictErrorRetryDelay: -1}})
		}},
		{"eviction.Options.Evictor", func() error {
			return newDrainer(eviction.Options{Helper: &drain.Helper{DisableEviction: true}, Evictor: eviction.PodDeletion(client)})
		}},
		{"eviction.Options.Concurrency", func() error { return newDrainer(eviction.Options{Concurrency: -1}) }},
		{"eviction.Options.ConnectTimeout", func() error { return newDrainer(eviction.Options{ConnectTimeout: -1}) }},
		{"eviction.Options.BudgetRecheck", func() error { return newDrainer(eviction.Options{BudgetRecheck: -1}) }},
		{"eviction.Options.Backoff.Duration", func() error { return newDrainer(eviction.Options{Backoff: wait.Backoff{Steps: 3}}) }},
		{"eviction.Options.Helper.PodSelector", func() error { return newDrainer(eviction.Options{Helper: &drain.Helper{PodSelector: "a b c"}}) }},
		{"eviction.Options.Helper.DryRunStrategy", func() error { return newDrainer(eviction.Options{Helper: &drain.Helper{DryRunStrategy: 9}}) }},
		{"eviction.Options.DomainLabel", func() error { return newDrainer(eviction.Options{DomainLabel: "not a key!"}) }},
		{"eviction.Options.Namespace", func() error { return newDrainer(eviction.Options{Namespace: "Not_A_Namespace"}) }},
		{"eviction.Options.Groupers[1]", func() error {
			return newDrainer(eviction.Options{Groupers: []topology.Grouper{topology.DefaultGroupers()[0], nil}})
		}},
		{"eviction.Options.Informers.Pods", func() error {
			return newDrainer(eviction.Options{Informers: &clusterinformers.Set{Nodes: cache.NewSharedIndexInformer(nil, &corev1.Node{}, 0, nil)}})
		}},
		{"clusterinformers.FromCache(c)", func() error { _, err := clusterinformers.FromCache(ctx, storelessCache{}); return err }},
		{"eviction.NewPlan(domain)", func() error { _, err := eviction.NewPlan("", &eviction.Snapshot{}, eviction.Options{}); return err }},
		{"eviction.NewPlan(snap)", func() error { _, err := eviction.NewPlan("ud-1", nil, eviction.Options{}); return err }},
		{"eviction.Snapshot.DaemonSets", func() error {
			_, err := eviction.NewPlan("ud-1", daemonSetSnapshot(), eviction.Options{})
			return err
		}},
		{"eviction.Drainer.Plan(domain)", func() error { _, err := drainer.Plan(ctx, ""); return err }},
		{"eviction.Drainer.Drain(domain)", func() error { _, _, err := drainer.Drain(ctx, "", eviction.DrainOptions{}); return err }},
		{"eviction.Drainer.Uncordon(domain)", func() error { _, err := drainer.Uncordon(ctx, ""); return err }},
		{"eviction.Drainer.Health(domains)", func() error { _, err := drainer.Health(ctx, "ud-1", ""); return err }},
		{"eviction.Drainer.WaitHealthy(domains)", func() error { _, err := drainer.WaitHealthy(ctx, ""); return err }},
		{"eviction.Options.Namespace", func() error {
			_, err := scoped.Rollout(ctx, eviction.RolloutOptions{Upgrade: func(context.Context, topology.Domain) error { return nil }})
			return err
		}},
		{"eviction.RolloutOptions.ID", func() error { return rollout(eviction.RolloutOptions{ID: "not an ID!"}) }},
		{"eviction.RolloutOptions.RecoveryTimeout", func() error { return rollout(eviction.RolloutOptions{RecoveryTimeout: -1}) }},
		{"eviction.RolloutOptions.GPUCheckGrace", func() error { return rollout(eviction.RolloutOptions{GPUCheckGrace: -1}) }},
		{"eviction.RolloutOptions.WorkloadUpdateTimeout", func() error { return rollout(eviction.RolloutOptions{WorkloadUpdateTimeout: -1}) }},
		{"eviction.RolloutOptions.WorkloadUpdateInterval", func() error { return rollout(eviction.RolloutOptions{WorkloadUpdateInterval: -1}) }},
		{"eviction.RolloutOptions.Domains", func() error { return rollout(eviction.RolloutOptions{Domains: []string{"ud-1", "ud-1"}}) }},
		{"eviction.RolloutOptions.Order", func() error { return rollout(eviction.RolloutOptions{Order: "random"}) }},
		{"eviction.RolloutOptions.Steering", func() error { return rollout(eviction.RolloutOptions{Steering: "sideways"}) }},
		{"eviction.RolloutOptions.InPlace", func() error { return rollout(eviction.RolloutOptions{InPlace: true}) }},
		{"eviction.RolloutOptions.InPlace", func() error {
			return rollout(eviction.RolloutOptions{InPlace: true, Parallel: eviction.ParallelAuto, Steering: eviction.SteerAuto})
		}},
		{"eviction.RolloutOptions.LockDuration", func() error {
			return rollout(eviction.RolloutOptions{LockDuration: time.Second})
		}},
		{"eviction.RolloutOptions.LockNamespace", func() error {
			return rollout(eviction.RolloutOptions{LockNamespace: "Not_A_Namespace"})
		}},
		{"eviction.RolloutOptions.ID", func() error { return status("not an ID!", eviction.RolloutOptions{}) }},
		{"eviction.RolloutOptions.Domains", func() error { return status("", eviction.RolloutOptions{Domains: []string{""}}) }},
		{"eviction.RolloutOptions.Order", func() error { return status("", eviction.RolloutOptions{Order: "random"}) }},
		{"eviction.RolloutOptions.LockNamespace", func() error {
			return status("", eviction.RolloutOptions{LockNamespace: "Not_A_Namespace"})
		}},

		// eviction: the read-only Drainer's options, its constructor and
		// methods; its write methods name its constructor.
		{"eviction.NewReader(client)", func() error { _, err := eviction.NewReader(nil, eviction.Options{}); return err }},
		{"eviction.NewReader(client)", func() error { _, err := reader.Uncordon(ctx, "ud-1"); return err }},
		{"eviction.Options.DomainLabel", func() error { return newReader(eviction.Options{DomainLabel: "not a key!"}) }},
		{"eviction.Options.Namespace", func() error { return newReader(eviction.Options{Namespace: "Not_A_Namespace"}) }},
		{"eviction.Options.ConnectTimeout", func() error { return newReader(eviction.Options{ConnectTimeout: -1}) }},
		{"eviction.Options.Groupers[0]", func() error { return newReader(eviction.Options{Groupers: []topology.Grouper{nil}}) }},
		{"eviction.Options.Informers.Pods", func() error {
			return newReader(eviction.Options{Informers: &clusterinformers.Set{Nodes: cache.NewSharedIndexInformer(nil, &corev1.Node{}, 0, nil)}})
		}},
		{"eviction.Drainer.Health(domains)", func() error { _, err := reader.Health(ctx, ""); return err }},
		{"eviction.Drainer.WaitHealthy(domains)", func() error { _, err := reader.WaitHealthy(ctx, "ud-1", ""); return err }},
		{"eviction.RolloutOptions.ID", func() error {
			_, err := reader.RolloutStatus(ctx, eviction.RolloutOptions{ID: "not an ID!"})
			return err
		}},

		// readiness: checks, members, the checker and its server.
		{"readiness.NewChecker(members)", func() error { return newChecker(nil, readiness.Options{}) }},
		{"readiness.Member.Check", func() error { return newChecker([]readiness.Member{{Name: "a"}}, readiness.Options{}) }},
		{"readiness.Member.Name", func() error { return newChecker([]readiness.Member{{Name: "-a", Check: ok}}, readiness.Options{}) }},
		{"readiness.Options.MemberTimeout", func() error { return newChecker(members, readiness.Options{MemberTimeout: -1}) }},
		{"readiness.Options.Timeout", func() error { return newChecker(members, readiness.Options{Timeout: -1}) }},
		{"readiness.Options.FailureThreshold", func() error { return newChecker(members, readiness.Options{FailureThreshold: -1}) }},
		{"readiness.ParseMember(spec)", func() error { _, err := readiness.ParseMember("no-url"); return err }},
		{"readiness.HTTPCheck(rawURL)", func() error { return readiness.HTTPCheck("ftp://a:1")(ctx) }},
		{"readiness.WithTLSConfig(config)", func() error {
			return readiness.HTTPCheck("https://a:1", readiness.WithHTTPClient(&http.Client{}), readiness.WithTLSConfig(&tls.Config{}))(ctx)
		}},
		{"readiness.TCPCheck(addr)", func() error { return readiness.TCPCheck("no-port")(ctx) }},
		{"readiness.LWSOptions.Scheme", func() error { return lws(readiness.LWSOptions{Scheme: "ftp", Port: 8000}) }},
		{"readiness.LWSOptions.Port", func() error { return lws(readiness.LWSOptions{}) }},
		{"readiness.LWSOptions.Path", func() error { return lws(readiness.LWSOptions{Port: 8000, Path: "health"}) }},
		{"readiness.LWSOptions.ExcludeLeader", func() error { return lws(readiness.LWSOptions{Port: 8000, ExcludeLeader: true}) }},
		{"readiness.TLSOptions.CAFile", func() error { _, err := readiness.TLSOptions{CAFile: missing}.Config(); return err }},
		{"readiness.TLSOptions.ClientCertFile", func() error { _, err := readiness.TLSOptions{ClientKeyFile: missing}.Config(); return err }},
		{"readiness.ServeOptions.MaxConnections", func() error { return serve(readiness.ServeOptions{MaxConnections: -1}) }},
		{"readiness.ServeOptions.MaxHeaderBytes", func() error { return serve(readiness.ServeOptions{MaxHeaderBytes: 2 << 20}) }},
		{"readiness.ServeOptions.ReadTimeout", func() error { return serve(readiness.ServeOptions{ReadTimeout: -1}) }},
		{"readiness.ServeOptions.WriteTimeout", func() error { return serve(readiness.ServeOptions{WriteTimeout: time.Nanosecond}) }},
		{"readiness.ServeOptions.IdleTimeout", func() error { return serve(readiness.ServeOptions{IdleTimeout: -1}) }},
		{"readiness.ServeOptions.ShutdownTimeout", func() error { return serve(readiness.ServeOptions{ShutdownTimeout: -1}) }},

		// readiness/gate: the controller and its leader election.
		{"gate.New(client)", func() error { _, err := gate.New(nil, gate.Options{}); return err }},
		{"gate.Options.Namespace", func() error { return newGate(gate.Options{Namespace: "Not_A_Namespace"}) }},
		{"gate.Options.Selector", func() error { return newGate(gate.Options{Selector: "a b c"}) }},
		{"gate.Options.Workers", func() error { return newGate(gate.Options{Workers: -1}) }},
		{"gate.Options.ResyncPeriod", func() error { return newGate(gate.Options{ResyncPeriod: -1}) }},
		{"gate.Options.Groupers[0]", func() error { return newGate(gate.Options{Groupers: []topology.Grouper{nil}}) }},
		{"gate.LeaderElection.Namespace", func() error { return newGate(gate.Options{LeaderElection: &gate.LeaderElection{}}) }},
		{"gate.LeaderElection.Name", func() error { return election(gate.LeaderElection{Name: "Not_A_Name"}) }},
		{"gate.LeaderElection.LeaseDuration", func() error { return election(gate.LeaderElection{LeaseDuration: -1}) }},
		{"gate.LeaderElection.RenewDeadline", func() error { return election(gate.LeaderElection{RenewDeadline: -1}) }},
		{"gate.LeaderElection.RetryPeriod", func() error { return election(gate.LeaderElection{RetryPeriod: -1}) }},

		// bootstrap: the target and the options of WaitForServer.
		{"bootstrap.WaitForServer(target)", func() error { return waitServer("", bootstrap.Options{}) }},
		{"bootstrap.Options.Timeout", func() error { return waitServer("http://a:1", bootstrap.Options{Timeout: -1}) }},
		{"bootstrap.Options.AttemptTimeout", func() error { return waitServer("http://a:1", bootstrap.Options{AttemptTimeout: -1}) }},
		{"bootstrap.Options.MaxAttempts", func() error { return waitServer("http://a:1", bootstrap.Options{MaxAttempts: -1}) }},
		{"bootstrap.Options.Backoff", func() error { return waitServer("http://a:1", bootstrap.Options{Backoff: wait.Backoff{Duration: -1}}) }},
		{"bootstrap.Options.StatusCodes", func() error { return waitServer("http://a:1", bootstrap.Options{StatusCodes: []int{42}}) }},
		{"bootstrap.Options.CheckBody", func() error {
			return waitServer("tcp://a:1", bootstrap.Options{CheckBody: bootstrap.BodyContains("ok")})
		}},
		{"bootstrap.Options.Header", func() error { return waitServer("tcp://a:1", bootstrap.Options{Header: http.Header{"X": {"y"}}}) }},
		{"bootstrap.Options.HeaderFiles", func() error {
			return waitServer("http://a:1", bootstrap.Options{HeaderFiles: map[string]string{"X": missing}})
		}},
		{"bootstrap.Options.BearerTokenFile", func() error { return waitServer("http://a:1", bootstrap.Options{BearerTokenFile: missing}) }},
		{"bootstrap.Options.CAFile", func() error { return waitServer("http://a:1", bootstrap.Options{CAFile: missing}) }},
		{"bootstrap.Options.ServerName", func() error { return waitServer("http://a:1", bootstrap.Options{ServerName: "a"}) }},
		{"bootstrap.Options.ClientCertFile", func() error { return waitServer("https://a:1", bootstrap.Options{ClientKeyFile: missing}) }},

		// upgrade: the ready-made steps.
		{"upgrade.Job(client)", func() error { _, err := upgrade.Job(nil, template(nil)); return err }},
		{"upgrade.JobOptions.Template", func() error { return job(template(func(s *corev1.PodSpec) { s.Containers = nil })) }},
		{"upgrade.JobOptions.RolloutID", func() error { o := template(nil); o.RolloutID = ""; return job(o) }},
		{"upgrade.JobOptions.Timeout", func() error { o := template(nil); o.Timeout = -1; return job(o) }},
		{"upgrade.NodeLabel(client)", func() error {
			_, err := upgrade.NodeLabel(nil, upgrade.NodeLabelOptions{Key: "k", Value: "v", Done: done})
			return err
		}},
		{"upgrade.NodeLabelOptions.Key", func() error { return nodeLabel(upgrade.NodeLabelOptions{Key: "a b", Value: "v", Done: done}) }},
		{"upgrade.NodeLabelOptions.Value", func() error { return nodeLabel(upgrade.NodeLabelOptions{Key: "k", Value: "a b", Done: done}) }},
		{"upgrade.NodeLabelOptions.Done", func() error { return nodeLabel(upgrade.NodeLabelOptions{Key: "k", Value: "v"}) }},
		{"upgrade.NodeLabelOptions.Timeout", func() error {
			return nodeLabel(upgrade.NodeLabelOptions{Key: "k", Value: "v", Done: done, Timeout: -1})
		}},
		{"upgrade.WebhookOptions.URL", func() error { return webhook(upgrade.WebhookOptions{URL: "ftp://a"}) }},
		{"upgrade.WebhookOptions.AttemptTimeout", func() error { return webhook(upgrade.WebhookOptions{URL: "http://a", AttemptTimeout: -1}) }},
		{"upgrade.WebhookOptions.Backoff", func() error {
			return webhook(upgrade.WebhookOptions{URL: "http://a", Backoff: wait.Backoff{Duration: 1}})
		}},

		// kubeclient: the configuration a client starts from, and its options.
		{"kubeclient.Config(base)", func() error { _, err := kubeclient.Config(nil, kubeclient.Options{}); return err }},
		{"kubeclient.Options.Burst", func() error { _, err := kubeclient.Config(&rest.Config{}, kubeclient.Options{Burst: -1}); return err }},

		// metrics: the registerer each set of metrics is registered with.
		{"metrics.New(reg)", func() error { _, err := metrics.New(nil); return err }},
		{"metrics.NewMembers(reg)", func() error { _, err := metrics.NewMembers(nil); return err }},
		{"metrics.NewGateWrites(reg)", func() error { _, err := metrics.NewGateWrites(nil); return err }},
	} {
		err := tc.call()
		var ce *udrain.ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%s: got %v, want a *udrain.ConfigError", tc.want, err)
			continue
		}
		if ce.Field != tc.want {
			t.Errorf("%s: Field = %q, want %q (error: %v)", tc.want, ce.Field, tc.want, err)
		}
		if problem := fieldProblem(t, ce.Field); problem != "" {
			t.Errorf("Field %q %s", ce.Field, problem)
		}
	}
}

// fieldProblem says how field breaks the convention of ConfigError.Field,
// reading the package's source for what it names; "" if it does not.
func fieldProblem(t *testing.T, field string) string {
	t.Helper()
	if m := argumentField.FindStringSubmatch(field); m != nil {
		pkg, typ, fn, arg := m[1], m[2], m[3], m[4]
		decls, problem := packageDecls(t, pkg)
		if problem != "" {
			return problem
		}
		for _, d := range decls {
			f, ok := d.(*ast.FuncDecl)
			if !ok || f.Name.Name != fn || receiverName(f) != typ {
				continue
			}
			for _, p := range f.Type.Params.List {
				for _, n := range p.Names {
					if n.Name == arg {
						return ""
					}
				}
			}
			return "names an argument " + arg + " that " + strings.TrimPrefix(typ+"."+fn, ".") + " does not have"
		}
		return "names a function " + strings.TrimPrefix(typ+"."+fn, ".") + " that package " + pkg + " does not have"
	}
	m := settingField.FindStringSubmatch(field)
	if m == nil {
		return "is neither package.Type.Field nor package.Func(arg) nor package.Type.Method(arg)"
	}
	pkg, typ := m[1], m[2]
	decls, problem := packageDecls(t, pkg)
	if problem != "" {
		return problem
	}
	types := map[string]ast.Expr{}
	for _, d := range decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.TYPE {
			for _, s := range g.Specs {
				types[s.(*ast.TypeSpec).Name.Name] = s.(*ast.TypeSpec).Type
			}
		}
	}
	cur, ok := types[typ]
	if !ok {
		return "names a type " + typ + " that package " + pkg + " does not have"
	}
	// Follow the fields while their types are the package's own structs;
	// a field of a type of another package is taken as named.
	for _, sel := range strings.Split(m[3], ".")[1:] {
		name, index, _ := strings.Cut(sel, "[")
		if cur == nil {
			return ""
		}
		st, ok := cur.(*ast.StructType)
		if !ok {
			return "names a field " + name + " of a type that is not a struct"
		}
		var next ast.Expr
		found := false
		for _, f := range st.Fields.List {
			for _, n := range f.Names {
				if n.Name == name {
					next, found = f.Type, true
				}
			}
		}
		if !found {
			return "names a field " + name + " that does not exist"
		}
		cur = localType(types, next, index != "")
	}
	return ""
}

// localType returns the definition of the package's own type that expr
// denotes (its element type when indexed), or nil for another's.
func localType(types map[string]ast.Expr, expr ast.Expr, indexed bool) ast.Expr {
	if star, ok := expr.(*ast.StarExpr); ok {
		expr = star.X
	}
	if indexed {
		a, ok := expr.(*ast.ArrayType)
		if !ok {
			return nil
		}
		return localType(types, a.Elt, false)
	}
	if id, ok := expr.(*ast.Ident); ok {
		return types[id.Name]
	}
	return nil
}

func receiverName(f *ast.FuncDecl) string {
	if f.Recv == nil || len(f.Recv.List) == 0 {
		return ""
	}
	expr := f.Recv.List[0].Type
	if star, ok := expr.(*ast.StarExpr); ok {
		expr = star.X
	}
	if id, ok := expr.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// packageDecls returns the top-level declarations of the non-test files
// of the package code imports as pkg.
func packageDecls(t *testing.T, pkg string) ([]ast.Decl, string) {
	t.Helper()
	dir, ok := packageDirs[pkg]
	if !ok {
		return nil, "names a package " + pkg + " that is not one of the module's"
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var decls []ast.Decl
	fset := token.NewFileSet()
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		decls = slices.Concat(decls, f.Decls)
	}
	return decls, ""
}

// storelessCache is a cache whose informers have no GetStore.
type storelessCache struct{}

func (storelessCache) GetInformer(context.Context, any, ...struct{}) (clusterinformers.EventInformer, error) {
	return storelessInformer{}, nil
}

type storelessInformer struct{}

func (storelessInformer) AddEventHandler(cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return nil, nil
}
func (storelessInformer) RemoveEventHandler(cache.ResourceEventHandlerRegistration) error { return nil }
func (storelessInformer) HasSynced() bool                                                 { return true }

// daemonSetSnapshot is a snapshot of one node of domain ud-1 with a pod of
// a DaemonSet on it, and no DaemonSets.
func daemonSetSnapshot() *eviction.Snapshot {
	yes := true
	return &eviction.Snapshot{
		Nodes: []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n-1", Labels: map[string]string{topology.DefaultDomainLabel: "ud-1"}}}},
		Pods: []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "plugin-a",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "plugin", Controller: &yes}}},
			Spec: corev1.PodSpec{NodeName: "n-1"}}},
	}
}

// jobTemplate is a Job template upgrade.Job takes.
func jobTemplate() *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "kubelet-upgrade", Namespace: "ops"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "upgrade", Image: "example.com/upgrader:1"}},
		}}},
	}
}

// The convention check itself: it refuses a name that does not exist.
func TestFieldProblemRefusesWhatDoesNotExist(t *testing.T) {
	for field, want := range map[string]string{
		"eviction.Options.Concurrency":          "",
		"eviction.RolloutOptions.LockNamespace": "",
		"eviction.Options.Informers.Pods":       "",
		"gate.Options.Groupers[2]":              "",
		"eviction.Drainer.Drain(domain)":        "",
		"bootstrap.WaitForServer(target)":       "",
		"eviction.Options.Concurency":           "names a field Concurency that does not exist",
		"upgrade.Options.Job.Name":              "names a field Name that does not exist",
		"eviction.Option.Concurrency":           "names a type Option that package eviction does not have",
		"eviction.New(clientset)":               "names an argument clientset that New does not have",
		"eviction.Drainer.Drain(name)":          "names an argument name that Drainer.Drain does not have",
		"eviction.Drain(domain)":                "names a function Drain that package eviction does not have",
		"topology.Options.Label":                "names a package topology that is not one of the module's",
		"eviction.domain":                       "is neither package.Type.Field nor package.Func(arg) nor package.Type.Method(arg)",
		"upgrade.Job client":                    "is neither package.Type.Field nor package.Func(arg) nor package.Type.Method(arg)",
		"eviction.New":                          "is neither package.Type.Field nor package.Func(arg) nor package.Type.Method(arg)",
		"Options.Concurrency":                   "is neither package.Type.Field nor package.Func(arg) nor package.Type.Method(arg)",
	} {
		if got := fieldProblem(t, field); got != want {
			t.Errorf("fieldProblem(%q) = %q, want %q", field, got, want)
		}
	}
}
