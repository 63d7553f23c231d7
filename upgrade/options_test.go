package upgrade

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/internal/testkit/kube"
)

// configError is err's *udrain.ConfigError, or nil.
func configError(t *testing.T, err error) *udrain.ConfigError {
	t.Helper()
	if err == nil {
		return nil
	}
	ce, ok := errors.AsType[*udrain.ConfigError](err)
	if !ok {
		t.Fatalf("%v (%T) is not a *udrain.ConfigError", err, err)
	}
	return ce
}

// onlyField compares ConfigErrors by Field and See.
var onlyField = cmpopts.IgnoreFields(udrain.ConfigError{}, "Problem")

// TestOptions: at most one step; none is no step; the chosen step's
// options are checked, and its constructor builds it.
func TestOptions(t *testing.T) {
	job := &JobOptions{Template: mustTemplate(t, kube.JobTemplateYAML), RolloutID: "r"}
	job.Template.Namespace = "udrain-system"
	label := &NodeLabelOptions{Key: "k", Value: "1", Done: Signal{SignalLabel, "d", "1"}}
	hook := &WebhookOptions{URL: "https://upgrade.example.com/"}
	command := &CommandOptions{Command: "true"}
	for name, tc := range map[string]struct {
		opts    Options
		want    *udrain.ConfigError
		hasStep bool
	}{
		"none":       {Options{}, nil, false},
		"command":    {Options{Command: command}, nil, true},
		"job":        {Options{Job: job}, nil, true},
		"node label": {Options{NodeLabel: label}, nil, true},
		"webhook":    {Options{Webhook: hook}, nil, true},
		"two": {Options{Command: command, Webhook: hook},
			&udrain.ConfigError{Field: "upgrade.Options.Command", See: []string{"upgrade.Options.Webhook"}}, false},
		"three": {Options{Job: job, NodeLabel: label, Webhook: hook},
			&udrain.ConfigError{Field: "upgrade.Options.Job", See: []string{"upgrade.Options.NodeLabel", "upgrade.Options.Webhook"}}, false},
		"the chosen one is checked": {Options{Webhook: &WebhookOptions{URL: "ftp://h/"}},
			&udrain.ConfigError{Field: "upgrade.WebhookOptions.URL"}, false},
		"the job's too": {Options{Job: &JobOptions{Template: job.Template}},
			&udrain.ConfigError{Field: "upgrade.JobOptions.RolloutID"}, false},
		"the label's too": {Options{NodeLabel: &NodeLabelOptions{Key: "k", Value: "1", Done: Signal{SignalLabel, "k", "1"}}},
			&udrain.ConfigError{Field: "upgrade.NodeLabelOptions.Done"}, false},
		"the command's too": {Options{Command: &CommandOptions{}},
			&udrain.ConfigError{Field: "upgrade.CommandOptions.Command"}, false},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, configError(t, tc.opts.Validate()), onlyField); diff != "" {
				t.Errorf("Validate (-want +got):\n%s", diff)
			}
			step, err := New(fake.NewClientset(), tc.opts)
			if diff := cmp.Diff(tc.want, configError(t, err), onlyField); diff != "" {
				t.Errorf("New (-want +got):\n%s", diff)
			}
			if (step != nil) != tc.hasStep {
				t.Errorf("New returned a step: %t, want %t", step != nil, tc.hasStep)
			}
		})
	}
}

func mustTemplate(t *testing.T, text string) *batchv1.Job {
	t.Helper()
	j, err := ParseJobTemplate([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func TestParseJobTemplate(t *testing.T) {
	for name, tc := range map[string]struct {
		text        string
		wantName    string
		wantProblem string
	}{
		"a Job":           {text: kube.JobTemplateYAML, wantName: "kubelet-upgrade"},
		"JSON":            {text: `{"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}}`, wantName: "j"},
		"a Pod":           {text: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n", wantProblem: `apiVersion "v1", kind "Pod": want a batch/v1 Job`},
		"another version": {text: strings.Replace(kube.JobTemplateYAML, "batch/v1", "batch/v2", 1), wantProblem: `apiVersion "batch/v2", kind "Job": want a batch/v1 Job`},
		"no kind":         {text: "metadata:\n  name: x\n", wantProblem: `apiVersion "", kind "": want a batch/v1 Job`},
		"a typo":          {text: strings.Replace(kube.JobTemplateYAML, "backoffLimit", "backofLimit", 1), wantProblem: `unknown field "backofLimit"`},
		"not YAML":        {text: "\t:", wantProblem: "not a Job: "},
		"a field twice":   {text: kube.JobTemplateYAML + "kind: Job\n", wantProblem: `"kind" already set`},
	} {
		t.Run(name, func(t *testing.T) {
			j, err := ParseJobTemplate([]byte(tc.text))
			ce := configError(t, err)
			switch {
			case tc.wantProblem == "" && err != nil:
				t.Fatalf("ParseJobTemplate: %v", err)
			case tc.wantProblem == "":
				if j.Name != tc.wantName {
					t.Errorf("name %q, want %q", j.Name, tc.wantName)
				}
			case ce == nil || ce.Field != "upgrade.JobOptions.Template" || !strings.Contains(ce.Problem, tc.wantProblem):
				t.Errorf("ParseJobTemplate: %v, want a ConfigError about upgrade.JobOptions.Template with %q", err, tc.wantProblem)
			}
		})
	}
}

func TestParseLabel(t *testing.T) {
	for _, tc := range []struct {
		text             string
		wantKey, wantVal string
		want             *udrain.ConfigError
	}{
		{text: "example.com/kubelet=1.37.2", wantKey: "example.com/kubelet", wantVal: "1.37.2"},
		{text: "k=", wantKey: "k"},
		{text: "k=a=b", want: &udrain.ConfigError{Field: "upgrade.NodeLabelOptions.Value", Problem: `"a=b" is not a label value: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`}},
		{text: "k", want: &udrain.ConfigError{Field: "upgrade.NodeLabelOptions.Key", Problem: `"k": write KEY=VALUE`}},
		{text: "a b=1", want: &udrain.ConfigError{Field: "upgrade.NodeLabelOptions.Key"}},
		{text: "=1", want: &udrain.ConfigError{Field: "upgrade.NodeLabelOptions.Key"}},
	} {
		k, v, err := ParseLabel(tc.text)
		ce := configError(t, err)
		opts := cmp.Options{}
		if tc.want != nil && tc.want.Problem == "" {
			opts = append(opts, onlyField)
		}
		if diff := cmp.Diff(tc.want, ce, opts); diff != "" {
			t.Errorf("ParseLabel(%q) error (-want +got):\n%s", tc.text, diff)
		}
		if err == nil && (k != tc.wantKey || v != tc.wantVal) {
			t.Errorf("ParseLabel(%q) = %q, %q; want %q, %q", tc.text, k, v, tc.wantKey, tc.wantVal)
		}
	}
}

func TestParseSignal(t *testing.T) {
	for _, tc := range []struct {
		kind        SignalKind
		text        string
		want        Signal
		wantProblem string
	}{
		{SignalLabel, "example.com/done=1.37", Signal{SignalLabel, "example.com/done", "1.37"}, ""},
		{SignalAnnotation, "example.com/state=done, really", Signal{SignalAnnotation, "example.com/state", "done, really"}, ""},
		{SignalCondition, "KubeletUpgraded", Signal{SignalCondition, "KubeletUpgraded", ""}, ""},
		{SignalCondition, "Rebooted=False", Signal{SignalCondition, "Rebooted", "False"}, ""},
		{SignalLabel, "done", Signal{}, `label "done": write KEY=VALUE`},
		{SignalAnnotation, "done", Signal{}, `annotation "done": write KEY=VALUE`},
		{SignalLabel, "a b=1", Signal{}, `"a b" is not a label key`},
		{SignalLabel, "d=a b", Signal{}, `"a b" is not a label value`},
		{SignalCondition, "", Signal{}, "a condition signal needs the condition type"},
		{SignalCondition, "Up=yes", Signal{}, `condition status "yes": use True, False or Unknown`},
		{"Taint", "k=v", Signal{}, `kind "Taint": use Label, Annotation or Condition`},
	} {
		got, err := ParseSignal(tc.kind, tc.text)
		if ce := configError(t, err); tc.wantProblem != "" {
			if ce == nil || ce.Field != "upgrade.NodeLabelOptions.Done" || !strings.HasPrefix(ce.Problem, tc.wantProblem) {
				t.Errorf("ParseSignal(%s, %q): %v, want a ConfigError about upgrade.NodeLabelOptions.Done: %s", tc.kind, tc.text, err, tc.wantProblem)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseSignal(%s, %q): %v", tc.kind, tc.text, err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("ParseSignal(%s, %q) (-want +got):\n%s", tc.kind, tc.text, diff)
		}
	}
}

func TestParseHeader(t *testing.T) {
	for name, tc := range map[string]struct {
		lines []string
		want  http.Header
		fails bool
	}{
		"none":                 {nil, http.Header{}, false},
		"trimmed, repeated":    {[]string{" authorization :  Bearer s3cr3t ", "X-Team: a", "X-Team: b"}, http.Header{"Authorization": {"Bearer s3cr3t"}, "X-Team": {"a", "b"}}, false},
		"a colon in the value": {[]string{"X-Url: https://h:1/"}, http.Header{"X-Url": {"https://h:1/"}}, false},
		"empty value":          {[]string{"X-Empty:"}, http.Header{"X-Empty": {""}}, false},
		"no colon":             {[]string{"Bearer s3cr3t"}, nil, true},
		"no name":              {[]string{" : s3cr3t"}, nil, true},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := ParseHeader(tc.lines)
			if tc.fails {
				ce := configError(t, err)
				if ce == nil || ce.Field != "upgrade.WebhookOptions.Header" || strings.Contains(ce.Error(), "s3cr3t") {
					t.Errorf("ParseHeader: %v, want a ConfigError about upgrade.WebhookOptions.Header that hides the value", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("header (-want +got):\n%s", diff)
			}
		})
	}
}
