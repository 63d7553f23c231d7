package report_test

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/udrain/udrain/report"
)

// TestNewVersion: the release stamps win; without them the module
// version, the VCS revision and time of the build info are used, and a
// pseudo-version names its commit and time.
func TestNewVersion(t *testing.T) {
	vcs := func(rev, at, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: at}, {Key: "vcs.modified", Value: modified}}
	}
	for _, tc := range []struct {
		name   string
		stamps [3]string // version, commit, buildDate
		bi     *debug.BuildInfo
		want   [3]string
	}{
		{"no build info", [3]string{}, nil, [3]string{"(devel)", "", ""}},
		{"no build info, stamped", [3]string{"v0.1.0", "abc", ""}, nil, [3]string{"v0.1.0", "abc", ""}},
		{"stamped release", [3]string{"v0.1.0", "0123456789abcdef0123456789abcdef01234567", "2026-11-30T10:00:00Z"},
			&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("ffff", "2020-01-01T00:00:00Z", "true")},
			[3]string{"v0.1.0", "0123456789abcdef0123456789abcdef01234567", "2026-11-30T10:00:00Z"}},
		{"go install of a tag", [3]string{}, &debug.BuildInfo{Main: debug.Module{Version: "v0.1.0"}},
			[3]string{"v0.1.0", "", ""}},
		{"no module version", [3]string{}, &debug.BuildInfo{}, [3]string{"(devel)", "", ""}},
		{"go install of a commit", [3]string{}, &debug.BuildInfo{Main: debug.Module{Version: "v0.1.1-0.20261130100000-0123456789ab"}},
			[3]string{"v0.1.1-0.20261130100000-0123456789ab", "0123456789ab", "2026-11-30T10:00:00Z"}},
		{"go build in a clean checkout", [3]string{}, &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("abcdef", "2026-11-30T10:00:00Z", "false")},
			[3]string{"(devel)", "abcdef", "2026-11-30T10:00:00Z"}},
		{"go build with changes", [3]string{}, &debug.BuildInfo{Main: debug.Module{Version: "v0.1.1-0.20261130100000-abcdef123456+dirty"}, Settings: vcs("abcdef123456ff", "2026-11-30T10:00:00Z", "true")},
			[3]string{"v0.1.1-0.20261130100000-abcdef123456+dirty", "abcdef123456ff-dirty", "2026-11-30T10:00:00Z"}},
		{"only the version stamped", [3]string{"v0.2.0", "", ""}, &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("abcdef", "2026-11-30T10:00:00Z", "false")},
			[3]string{"v0.2.0", "abcdef", "2026-11-30T10:00:00Z"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := report.NewVersion(tc.stamps[0], tc.stamps[1], tc.stamps[2], tc.bi)
			if diff := cmp.Diff(tc.want, [3]string{v.Version, v.Commit, v.BuildDate}); diff != "" {
				t.Errorf("version, commit, buildDate (-want +got):\n%s", diff)
			}
			if v.GoVersion != runtime.Version() || v.Platform != runtime.GOOS+"/"+runtime.GOARCH || v.Kind != report.KindVersion || v.APIVersion != report.APIVersion {
				t.Errorf("report %+v: want kind %s, this Go version and platform", v, report.KindVersion)
			}
		})
	}
}
