package app

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/config"
	"gopkg.in/yaml.v3"
)

// TestCrossPlayCarriesJudge: the cross-play tournament's judge is the
// run's judge, its timeout and rate limits included (they were dropped on
// the way through the tournament file's keys, which had none).
func TestCrossPlayCarriesJudge(t *testing.T) {
	const url = "http://127.0.0.1:9"
	run := strings.Replace(endowmentLeague, "concurrency: 8,", "concurrency: 8, timeout: 7s, requests_per_minute: 120, tokens_per_minute: 9000, max_retries: 5,", 1)
	rd := crossPlayRun(t, url, run, "requester")
	cfg, err := config.Parse([]byte(fmt.Sprintf(run, url, url)))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Judge.Timeout != 7*time.Second {
		t.Fatalf("the run's judge.timeout = %s, want 7s", cfg.Judge.Timeout)
	}
	tt, _, err := crossPlaySpec(cfg, rd, []int{0, 2}, CrossPlayOptions{Endpoint: url})
	if err != nil {
		t.Fatal(err)
	}
	canon, err := tt.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Judge map[string]any `yaml:"judge"`
	}
	if err := yaml.Unmarshal(canon, &doc); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"base_url": url + "/v1", "model": "sim-judge", "timeout": "7s",
		"requests_per_minute": "120", "tokens_per_minute": "9000", "max_retries": "5", "concurrency": "8"} {
		if got := fmt.Sprint(doc.Judge[key]); got != want {
			t.Errorf("cross-play judge.%s = %s, want %s (the run's)\n%s", key, got, want, canon)
		}
	}
}
