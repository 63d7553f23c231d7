package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/udrain/udrain/e2e/fixture"
	"github.com/udrain/udrain/e2e/testbed"
)

// TestPlatformControllerRollout runs the example examples/platform-controller
// (a client-go program that embeds a rollout over its own shared informer
// factory) as users would, against the testbed: built with go build, run
// as a ServiceAccount of its own (a kubeconfig holding its token), an
// upgrade webhook served by the test, with --status-resource and the
// NodeUpgrade resource of its crd.yaml installed.
// The first run is interrupted (SIGINT) while the webhook upgrades the
// second domain; the second run, with the same target version, resumes.
// Across both runs the CLI scenario's guarantees hold: each group
// disrupted once, never more than one group down, leaders first in each
// domain, every node labelled, marked upgraded and uncordoned. Every
// evicted pod has a Kubernetes Event that names its UID.
//
// The NodeUpgrade shows the rollout (issue 23): after the first run, where
// it stopped (the first domain Done, the second Stopped in its upgrade,
// the third Pending); while the second runs, Running, the domain being
// upgraded, and an ETA once two domains are upgraded; at the end,
// Completed. kubectl get prints it. The kube-apiserver's audit log shows
// that each run listed and watched nodes, pods, PodDisruptionBudgets and
// DaemonSets once each (its informer factory) and nothing else: the
// status costs no list or watch.
func TestPlatformControllerRollout(t *testing.T) {
	t.Parallel()
	bin := buildExample(t, "platform-controller")
	s := deploy(t, defaultScenario())
	ctx := t.Context()
	domains := s.domains()
	const version = "1.37.2"
	id := "platform-" + version
	audited := hasAuditLog(t)
	nodeUpgrades := installNodeUpgrades(t, s.tt, id)
	user, kubeconfig := platformControllerAccount(t, s.tt)
	kubectl := testbedKubectl(t)
	var before []testbed.AuditRequest
	if audited {
		before = auditSettled(t, user)
	}

	hook := &upgradeWebhook{hold: upgradeStep}
	srv := httptest.NewServer(hook)
	defer srv.Close()
	args := []string{"--kubeconfig", kubeconfig, "--target-version", version, "--webhook", srv.URL, "--recovery-timeout", "3m",
		"--status-resource", "-v", "2"}
	for _, d := range domains {
		args = append(args, "--domain", d)
	}

	start := time.Now()
	first := exec.CommandContext(ctx, bin, args...)
	hook.setOnRequest(func(domain string) {
		if domain == domains[1] {
			_ = first.Process.Signal(os.Interrupt)
		}
	})
	log1, err := runLogged(t, s.tt, first, "platform-controller-run1.log")
	run1 := time.Since(start)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("first run, interrupted in the upgrade of %s: %v, want exit code 1", domains[1], err)
	}
	for _, want := range []string{
		"Rollout stopped; run again with the same --target-version to resume",
		fmt.Sprintf(`domain=%q stage="Upgrade" id="platform-%s" cause="cancelled"`, domains[1], version),
		fmt.Sprintf(`domain.%s="Done" domain.%s="Interrupted" domain.%s="Pending"`, domains[0], domains[1], domains[2]),
	} {
		if !strings.Contains(log1, want) {
			t.Errorf("the first run's log has no %q", want)
		}
	}
	// The resource says where the run stopped.
	stopped := nodeUpgrades.get(t)
	if got, want := stopped.String(), fmt.Sprintf("Stopped running=false 1/3 current=%[2]s/Stopped/Upgrade eta=false [%[1]s Done, %[2]s Stopped/Upgrade, %[3]s Pending]",
		domains[0], domains[1], domains[2]); got != want {
		t.Errorf("after the first run, the NodeUpgrade says %s; want %s", got, want)
	}
	checkKubectlGet(t, kubectl, id, "1/3", "Stopped", domains[1])
	var counts1 requestCount
	if audited {
		after := auditSettled(t, user)
		counts1, before = countRequests(after[len(before):]), after
	}

	hook.setOnRequest(nil)
	poll := nodeUpgrades.poll(ctx)
	start2 := time.Now()
	log2, err := runLogged(t, s.tt, exec.CommandContext(ctx, bin, args...), "platform-controller-run2.log")
	run2 := time.Since(start2)
	seen := poll()
	if err != nil {
		t.Fatalf("second run with the same target version: %v", err)
	}
	t.Logf("the first run took %s, the second %s", run1.Round(time.Millisecond), run2.Round(time.Millisecond))
	if want := fmt.Sprintf(`domain.%s="Skipped" domain.%s="Done" domain.%s="Done"`, domains[0], domains[1], domains[2]); !strings.Contains(log2, want) {
		t.Errorf("the second run's log has no %q", want)
	}
	// Before its rollout, the second run found where the first stopped.
	if want := fmt.Sprintf(`state="Stopped" done="1/3" current=%q currentState="Stopped"`, domains[1]); !strings.Contains(log2, want) {
		t.Errorf("the second run's log has no %q: it did not read where the first stopped", want)
	}
	// The upgrade step of the interrupted domain runs again; the first
	// domain's does not.
	if got, want := hook.domains(), []string{domains[0], domains[1], domains[1], domains[2]}; !slices.Equal(got, want) {
		t.Errorf("webhook called for %q, want %q", got, want)
	}
	checkStatusesSeen(t, seen, domains)
	done := nodeUpgrades.get(t)
	if got, want := done.String(), fmt.Sprintf("Completed running=false 3/3 current= eta=false [%s Done, %s Done, %s Done]",
		domains[0], domains[1], domains[2]); got != want {
		t.Errorf("after the second run, the NodeUpgrade says %s; want %s", got, want)
	}
	checkKubectlGet(t, kubectl, id, "3/3", "Completed")
	if audited {
		counts2 := countRequests(auditSettled(t, user)[len(before):])
		t.Logf("the first run's requests as %s: %s", user, counts1)
		t.Logf("the second run's requests as %s: %s", user, counts2)
		checkControllerRequests(t, "the first run", counts1, true)
		checkControllerRequests(t, "the second run", counts2, false)
	}

	o := checkWholeRollout(t, s, start, "both runs")
	checkUpgradedAndUncordoned(t, s, id)
	checkTargetVersion(t, s, "upgrade.example.com/target-version", version)

	// Each evicted pod (by UID) has its UdrainEvicted event, and no event
	// names another pod.
	events, err := s.tt.Client.CoreV1().Events(s.tt.Name).List(ctx, metav1.ListOptions{FieldSelector: "reason=UdrainEvicted"})
	if err != nil {
		t.Fatal(err)
	}
	var named []types.UID
	for _, e := range events.Items {
		named = append(named, e.InvolvedObject.UID)
	}
	checkEvictionEvents(t, o, "UdrainEvicted", named)
}

// platformControllerUser is the ServiceAccount the platform-controller
// runs as.
const platformControllerUser = "platform-controller"

// platformControllerAccount makes the ServiceAccount the program runs as,
// with what it needs: the drainer's roles (deploy/rbac/drainer.yaml, its
// ClusterRole and its rollout-lock Role), list and watch on DaemonSets (its
// factory's DaemonSet informer), Events, and its NodeUpgrades. It returns
// the account's user name and a kubeconfig that holds only its token.
func platformControllerAccount(t *testing.T, tt *testbed.Test) (user, kubeconfig string) {
	t.Helper()
	rules := append(clusterRoleFromFile(t, drainerRoleFile, drainerRoleName).Rules,
		rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, Verbs: []string{"list", "watch"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "update", "patch"}},
		rbacv1.PolicyRule{APIGroups: []string{"upgrade.example.com"}, Resources: []string{"nodeupgrades"}, Verbs: []string{"get", "create"}},
		rbacv1.PolicyRule{APIGroups: []string{"upgrade.example.com"}, Resources: []string{"nodeupgrades/status"}, Verbs: []string{"patch"}})
	c := clientAs(t, tt, platformControllerUser, rules, true)
	lockRole := roleFromFile(t, drainerRoleFile, drainerLockRole)
	grantRoleIn(t, tt, c, lockRole.Namespace, tt.Name+"-lock", platformControllerUser, lockRole.Rules)

	tr, err := tt.Client.CoreV1().ServiceAccounts(tt.Name).CreateToken(t.Context(), platformControllerUser, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := clientcmdapi.NewConfig()
	tls := tt.Config.TLSClientConfig
	cfg.Clusters["testbed"] = &clientcmdapi.Cluster{Server: tt.Config.Host, CertificateAuthority: tls.CAFile, CertificateAuthorityData: tls.CAData,
		InsecureSkipTLSVerify: tls.Insecure, TLSServerName: tls.ServerName}
	cfg.AuthInfos[platformControllerUser] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts[platformControllerUser] = &clientcmdapi.Context{Cluster: "testbed", AuthInfo: platformControllerUser}
	cfg.CurrentContext = platformControllerUser
	kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	return "system:serviceaccount:" + tt.Name + ":" + platformControllerUser, kubeconfig
}

// hasAuditLog reports whether the cluster has an audit log to count
// requests with.
func hasAuditLog(t *testing.T) bool {
	t.Helper()
	if _, err := bed.AuditLog(t.Context(), "nobody"); err != nil {
		if errors.Is(err, testbed.ErrNotSupported) {
			t.Log("this cluster has no audit log: the requests are not counted:", err)
			return false
		}
		t.Fatal(err)
	}
	return true
}

// checkControllerRequests checks the requests of one run of the
// platform-controller: nodes, pods, PodDisruptionBudgets and DaemonSets
// listed once each (a list or a streaming list) and watched, by its
// informer factory; nothing else listed or watched; the NodeUpgrade
// created (by the first run only) and its status written.
func checkControllerRequests(t *testing.T, run string, c requestCount, first bool) {
	t.Helper()
	informed := []string{"nodes", "pods", "poddisruptionbudgets.policy", "daemonsets.apps"}
	// Before each upgraded mark, one node read by name (the rollout's
	// check that the cluster's history did not change): 3 domains at most.
	if n := c.of("list", "nodes (one by name)"); n > 3 {
		t.Errorf("%s read nodes by name %d time(s), want one per domain marked upgraded at most (3): %s", run, n, c)
	}
	for _, res := range informed {
		if n := c.listed(res); n != 1 {
			t.Errorf("%s listed %s %d time(s), want once (its informer's list): %s", run, res, n, c)
		}
		if c.of("watch", res) == 0 {
			t.Errorf("%s did not watch %s: %s", run, res, c)
		}
	}
	for k, n := range c.byKind {
		if (k.verb == "list" || k.verb == "watch") && !slices.Contains(informed, k.resource) && k.resource != "nodes (one by name)" {
			t.Errorf("%s sent %d %s: nothing but its informers should list or watch", run, n, k)
		}
	}
	created := 0
	if first {
		created = 1
	}
	if n := c.of("create", "nodeupgrades.upgrade.example.com"); n != created {
		t.Errorf("%s created the NodeUpgrade %d time(s), want %d: %s", run, n, created, c)
	}
	if n := c.of("patch", "nodeupgrades.upgrade.example.com/status"); n < 2 {
		t.Errorf("%s wrote the NodeUpgrade's status %d time(s), want before and after its rollout at least: %s", run, n, c)
	}
}

// checkStatusesSeen checks the NodeUpgrade's statuses seen while the
// second run ran: Running; the third domain Upgrading at some point (the
// webhook holds its upgrade); an ETA in every status of the running
// rollout with two domains upgraded (Done or Recovering: the ETA is
// learned from the time between their upgrades) and one not yet, and at
// least one such.
func checkStatusesSeen(t *testing.T, seen []nodeUpgradeStatus, domains []string) {
	t.Helper()
	var lines []string
	running, upgrading, withETA := false, false, 0
	for _, st := range seen {
		lines = append(lines, st.String())
		running = running || st.Running && st.State == "Running"
		upgrading = upgrading || st.Running && st.Current != nil && *st.Current == currentDomain{domains[2], "Upgrading", "Upgrade"}
		upgraded, left := 0, 0
		for _, d := range st.Domains {
			switch d.State {
			case "Done", "Recovering":
				upgraded++
			case "Pending", "Draining", "Upgrading":
				left++
			}
		}
		if st.Running && upgraded >= 2 && left > 0 {
			if st.ETA == "" {
				t.Errorf("the NodeUpgrade said %s: two domains are upgraded, one is left, and it has no ETA", st)
			}
			withETA++
		}
	}
	t.Logf("the NodeUpgrade's statuses seen during the second run:\n%s", strings.Join(lines, "\n"))
	if !running {
		t.Error("the NodeUpgrade never said Running while the second run ran")
	}
	if !upgrading {
		t.Errorf("the NodeUpgrade never said %s Upgrading while the webhook upgraded it", domains[2])
	}
	if withETA == 0 {
		t.Error("the NodeUpgrade never said the running rollout had two domains upgraded and one left")
	}
}

// checkKubectlGet runs kubectl get on the NodeUpgrade id and checks that
// its row holds each of want, under the columns of crd.yaml.
func checkKubectlGet(t *testing.T, kubectl, id string, want ...string) {
	t.Helper()
	out := run(t, kubectl, "get", "nodeupgrades", id, "-o", "wide")
	t.Logf("kubectl get nodeupgrades %s -o wide:\n%s", id, out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "NAME") {
		t.Fatalf("kubectl get printed %q, want a header and one row", out)
	}
	for _, col := range []string{"DONE", "STATE", "CURRENT", "CURRENT STATE", "STAGE", "ETA", "DOMAINS", "AGE"} {
		if !strings.Contains(lines[0], col) {
			t.Errorf("kubectl get has no column %s: %q", col, lines[0])
		}
	}
	fields := strings.Fields(lines[1])
	for _, w := range want {
		if !slices.Contains(fields, w) {
			t.Errorf("kubectl get's row %q has no %q", lines[1], w)
		}
	}
}

// nodeUpgradeStatus is what the test reads of a NodeUpgrade's status
// (examples/platform-controller/crd.yaml).
type nodeUpgradeStatus struct {
	State     string          `json:"state"`
	Running   bool            `json:"running"`
	Completed bool            `json:"completed"`
	Done      int             `json:"done"`
	Progress  string          `json:"progress"`
	Current   *currentDomain  `json:"current"`
	ETA       string          `json:"eta"`
	Domains   []currentDomain `json:"domains"`
}

type currentDomain struct {
	Domain string `json:"domain"`
	State  string `json:"state"`
	Stage  string `json:"stage"`
}

func (d currentDomain) String() string {
	s := d.Domain + " " + d.State
	if d.Stage != "" {
		s += "/" + d.Stage
	}
	return s
}

func (s nodeUpgradeStatus) String() string {
	current := ""
	if c := s.Current; c != nil {
		current = strings.ReplaceAll(c.String(), " ", "/")
	}
	var doms []string
	for _, d := range s.Domains {
		doms = append(doms, d.String())
	}
	return fmt.Sprintf("%s running=%t %s current=%s eta=%t [%s]", s.State, s.Running, s.Progress, current, s.ETA != "", strings.Join(doms, ", "))
}

// nodeUpgradeResource reads one NodeUpgrade as the cluster admin.
type nodeUpgradeResource struct {
	client dynamic.ResourceInterface
	name   string
}

var nodeUpgradesResource = schema.GroupVersionResource{Group: "upgrade.example.com", Version: "v1alpha1", Resource: "nodeupgrades"}

// installNodeUpgrades installs the example's crd.yaml (if the cluster has
// not got it yet) and deletes the NodeUpgrade name, now and when the test
// ends.
func installNodeUpgrades(t *testing.T, tt *testbed.Test, name string) *nodeUpgradeResource {
	t.Helper()
	dyn, err := dynamic.NewForConfig(tt.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := fixture.InstallCRDs(t.Context(), dyn, "../examples/platform-controller", "crd.yaml"); err != nil {
		t.Fatal(err)
	}
	r := &nodeUpgradeResource{client: dyn.Resource(nodeUpgradesResource), name: name}
	del := func(ctx context.Context) {
		if err := r.client.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete NodeUpgrade %s: %v", name, err)
		}
	}
	del(t.Context())
	t.Cleanup(func() { del(context.Background()) })
	return r
}

func (r *nodeUpgradeResource) read(ctx context.Context) (nodeUpgradeStatus, string, error) {
	var st nodeUpgradeStatus
	obj, err := r.client.Get(ctx, r.name, metav1.GetOptions{})
	if err != nil {
		return st, "", err
	}
	data, err := json.Marshal(obj.Object["status"])
	if err != nil {
		return st, "", err
	}
	return st, obj.GetResourceVersion(), json.Unmarshal(data, &st)
}

func (r *nodeUpgradeResource) get(t *testing.T) nodeUpgradeStatus {
	t.Helper()
	st, _, err := r.read(t.Context())
	if err != nil {
		t.Fatalf("NodeUpgrade %s: %v", r.name, err)
	}
	return st
}

// poll reads the NodeUpgrade every 100ms until the function it returns is
// called, which returns every status seen, once each.
func (r *nodeUpgradeResource) poll(ctx context.Context) func() []nodeUpgradeStatus {
	ctx, cancel := context.WithCancel(ctx)
	var seen []nodeUpgradeStatus
	done := make(chan struct{})
	go func() {
		defer close(done)
		last := ""
		for {
			if st, rv, err := r.read(ctx); err == nil && rv != last {
				seen, last = append(seen, st), rv
			}
			if sleepCtx(ctx, 100*time.Millisecond) != nil {
				return
			}
		}
	}()
	return func() []nodeUpgradeStatus {
		cancel()
		<-done
		return seen
	}
}

// upgradeWebhook is the upgrade service of the platform-controller
// example: it records each request's domain, calls onRequest, and answers
// 200 after hold (or gives up when the client goes away).
type upgradeWebhook struct {
	hold      time.Duration
	onRequest func(domain string)

	mu  sync.Mutex
	got []string
}

func (w *upgradeWebhook) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	var req struct {
		Domain string `json:"domain"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	w.mu.Lock()
	w.got = append(w.got, req.Domain)
	on := w.onRequest
	w.mu.Unlock()
	if on != nil {
		on(req.Domain)
	}
	select {
	case <-r.Context().Done():
		return
	case <-time.After(w.hold):
	}
	io.WriteString(rw, "upgraded")
}

func (w *upgradeWebhook) setOnRequest(fn func(domain string)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.onRequest = fn
}

func (w *upgradeWebhook) domains() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.got)
}

// buildExample builds the example program examples/<name> of the root
// module (name may be a path: quickstart/upgrade) into the test's
// temporary folder.
func buildExample(t *testing.T, name string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), filepath.Base(name))
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./examples/"+name)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/%s: %v\n%s", name, err, out)
	}
	return bin
}

// runLogged runs cmd to its end and returns its stderr (its log), which
// also goes into the test's artifacts as file if the test fails.
func runLogged(t *testing.T, tt *testbed.Test, cmd *exec.Cmd, file string) (string, error) {
	t.Helper()
	var log bytes.Buffer
	cmd.Stderr = &log
	// Interrupted with the test, the program still reports what it did.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 30 * time.Second
	err := cmd.Run()
	out := log.String()
	tt.OnFailure(file, func(w io.Writer) error { _, err := io.WriteString(w, out); return err })
	// The artifacts stay on the machine that ran the test: a failing
	// test's log (what CI shows) gets the program's last lines too.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the last lines of %s:\n%s", file, lastLines(out, 30))
		}
	})
	return out, err
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
