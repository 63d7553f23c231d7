package testbed

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReadPIDs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		files   map[string]string
		want    map[string]int
		wantErr bool
	}{
		{name: "kwokctl's files, with and without a newline",
			files: map[string]string{"etcd.pid": "101", "kube-apiserver.pid": "102\n", "notes.txt": "x"},
			want:  map[string]int{"etcd": 101, "kube-apiserver": 102}},
		{name: "none", files: map[string]string{}, wantErr: true},
		{name: "garbage", files: map[string]string{"etcd.pid": "abc"}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for n, c := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := readPIDs(dir)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); !tc.wantErr && diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// The cluster's create flags carry KwokctlFlags after the feature gates.
func TestKwokctlFlags(t *testing.T) {
	k := newKwokCluster(Options{ClusterName: "c", FeatureGates: "A=true", KwokctlFlags: []string{"--disable-qps-limits"}})
	if diff := cmp.Diff([]string{"--kube-feature-gates=A=true", "--disable-qps-limits"}, k.flags); diff != "" {
		t.Errorf("kwokctl flags (-want +got):\n%s", diff)
	}
}
