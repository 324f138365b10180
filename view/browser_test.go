package view_test

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/view"
	"github.com/parleyhq/parley/view/browsertest"
)

// pageSeq is a token sequence as the dialogue page shows it: the loss
// mask read back from the highlighting.
type pageSeq struct {
	Role    string `json:"role"`
	Kind    string `json:"kind"`
	Mask    []int8 `json:"mask"`
	Trained string `json:"trained"`
	Masked  string `json:"masked"`
}

// readSeqs reads the dialogue page's sequences: each token's highlight,
// and the background of a trained and of a masked token.
const readSeqs = `Array.from(document.querySelectorAll('.tokens')).map(b => {
  const t = b.querySelector('.tok.m1'), m = b.querySelector('.tok.m0');
  return {role: b.dataset.role, kind: b.dataset.kind,
    mask: Array.from(b.querySelectorAll('.tok')).map(s => s.classList.contains('m1') ? 1 : 0),
    trained: t ? getComputedStyle(t).backgroundColor : '', masked: m ? getComputedStyle(m).backgroundColor : ''};
})`

// checkMasks compares the page's highlighted tokens with the batch rows.
func checkMasks(t *testing.T, where string, got []pageSeq, rows []dataset.BatchRow) {
	t.Helper()
	if len(got) != len(rows) {
		t.Fatalf("%s: the page shows %d token sequences, the batch has %d", where, len(got), len(rows))
	}
	for i, r := range rows {
		g := got[i]
		if g.Role != r.Role || g.Kind != r.Kind || !slices.Equal(g.Mask, r.LossMask) {
			t.Errorf("%s: sequence %d (%s %s): highlighted tokens differ from the batch's loss mask (%s %s, %d tokens shown, %d in the batch)",
				where, i, g.Role, g.Kind, r.Role, r.Kind, len(g.Mask), len(r.LossMask))
		}
		if g.Trained == "" || g.Trained == g.Masked {
			t.Errorf("%s: sequence %d: trained tokens' background %q is not told from masked ones' %q", where, i, g.Trained, g.Masked)
		}
	}
}

// TestBrowser drives Chromium through the viewer: the overview's chart
// (hover, click a step), a step's groups, a dialogue whose highlighted
// tokens are the batch's loss mask, a group side by side, the persona
// filter, and the export reopened from file:// with networking off.
func TestBrowser(t *testing.T) {
	run, rollout := trainedRun(t)
	art := browsertest.ArtifactsDir(t)
	ctx := browsertest.New(t, browsertest.Options{})
	s, err := view.NewServer([]string{run, rollout}, view.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()

	step, id, rows := batchRollout(t, run, 2)
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		browsertest.Do(t, ctx, what, steps...)
	}
	text := func(sel string) string { t.Helper(); return browsertest.Text(t, ctx, sel) }
	point := fmt.Sprintf(`svg[data-chart="reward"] circle[data-step="%d"]`, step)
	hover := func(sel string) string {
		t.Helper()
		browsertest.Hover(t, ctx, sel)
		return text("#tip")
	}

	do("the home page", chromedp.Navigate(ts.URL+"/"), chromedp.WaitVisible(css("a.run-link")))
	if home := text("#main"); !strings.Contains(home, "viewrun") || !strings.Contains(home, "parley rollout output") {
		t.Errorf("the home page lists %q, want the run and the rollout output", home)
	}
	browsertest.Screenshot(t, ctx, art, "0-home")
	do("the overview", chromedp.Click(css(`a.run-link[href="#/run/0"]`)), chromedp.WaitVisible(css(point)))
	mainText := text("#main")
	for _, w := range []string{"Reward: judge score", "Agreement rate", "Rounds", "Trainer: loss", "3 steps with rollouts"} {
		if !strings.Contains(mainText, w) {
			t.Errorf("the overview lacks %q", w)
		}
	}
	browsertest.Screenshot(t, ctx, art, "1-overview")
	browsertest.Eval[any](t, ctx, `document.querySelector('[data-chart="trainer/loss"]').scrollIntoView({block: 'center'}) || 0`)
	browsertest.Screenshot(t, ctx, art, "1b-overview-trainer")
	tip := hover(point)
	if !strings.Contains(tip, fmt.Sprintf("step %d", step)) || !strings.Contains(tip, "score mean: ") || !strings.Contains(tip, "group min–max: ") {
		t.Errorf("hovering step %d's point shows %q, want its step, score mean and band", step, tip)
	}
	browsertest.Screenshot(t, ctx, art, "2-hover")

	member := fmt.Sprintf(`a.member[data-rollout="%s"]`, id)
	do("click the step's point", chromedp.Click(css(point)), chromedp.WaitVisible(css(member)))
	if hash := browsertest.Eval[string](t, ctx, `location.hash`); hash != fmt.Sprintf("#/run/0/step/%d", step) {
		t.Errorf("clicking step %d's point opened %q", step, hash)
	}
	browsertest.Screenshot(t, ctx, art, "3-groups")
	do("open a dialogue", chromedp.Click(css(member)), chromedp.WaitVisible(css(".tokens .tok")))
	checkMasks(t, "served", browsertest.Eval[[]pageSeq](t, ctx, readSeqs), rows)
	mainText = text("#main")
	for _, w := range []string{"weights v", "Final completion", "Advantage", "from the step's batch"} {
		if !strings.Contains(mainText, w) {
			t.Errorf("the dialogue page lacks %q", w)
		}
	}
	if tinyModel() != "" && strings.Contains(mainText, "No tokenizer found") {
		t.Error("the dialogue page found no tokenizer beside models/tiny")
	}
	if tip := hover(".tokens .tok.m1"); !strings.Contains(tip, "logprob") {
		t.Errorf("hovering a trained token shows %q, want its logprob", tip)
	}
	browsertest.Screenshot(t, ctx, art, "4-dialogue-tokens")
	browsertest.Eval[any](t, ctx, `window.scrollTo(0, 0) || 0`)
	browsertest.Screenshot(t, ctx, art, "5-dialogue")

	do("the group side by side", chromedp.Click(css(`#crumbs a[href*="/group/"]`)), chromedp.WaitVisible(css(".columns .column")))
	if cols := browsertest.Eval[int](t, ctx, `document.querySelectorAll('.columns .column').length`); cols != 3 {
		t.Errorf("the group shows %d columns, want its 3 members", cols)
	}
	browsertest.Screenshot(t, ctx, art, "6-group")

	// The game pages' route hands kind and arguments to view/games'
	// renderer (stubbed here: the games half tests its own pages).
	browsertest.Eval[any](t, ctx, `window.parleyGames = {render: (kind, el, args) => { el.textContent = 'rendered ' + kind + ' ' + args.join(','); }}; location.hash = '#/g/tournament/0/a b'; 0`)
	do("a game page", chromedp.Poll[chromedp.Void](`document.getElementById('main').textContent.startsWith('rendered')`))
	if got := text("#main"); got != "rendered tournament 0,a b" {
		t.Errorf("#/g/tournament/0/a b rendered %q, want parleyGames.render(\"tournament\", el, [\"0\", \"a b\"])", got)
	}

	// The persona filter: the API says which groups it keeps.
	var all, want groupsAnswer
	get(t, s.Handler(), fmt.Sprintf("/api/run/groups?run=0&step=%d", step), &all)
	pair := all.Groups[len(all.Groups)-1].PersonaPairID
	get(t, s.Handler(), fmt.Sprintf("/api/run/groups?run=0&step=%d&persona=%s", step, pair), &want)
	do("filter by persona",
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = "#/run/0/step/%d"`, step)),
		chromedp.WaitVisible(css(`select[name="persona"]`)),
		chromedp.SetValue(css(`select[name="persona"]`), pair),
		// Mark the unfiltered page's table, to wait for the filtered one's
		// (hashchange comes after the click, asynchronously).
		chromedp.Evaluate[chromedp.Void](`document.querySelector('table.groups').dataset.old = '1'`),
		chromedp.Click(css(`form.filters button`)),
		chromedp.Poll[chromedp.Void](`location.hash.includes('persona=') && document.querySelector('table.groups:not([data-old])') !== null`))
	shown := browsertest.Eval[[]string](t, ctx, `Array.from(document.querySelectorAll('tr[data-group]')).map(r => r.dataset.group)`)
	var wantIDs []string
	for _, g := range want.Groups {
		wantIDs = append(wantIDs, g.GroupID)
	}
	if !slices.Equal(shown, wantIDs) || len(wantIDs) == 0 || len(all.PersonaPairs) > 1 && len(shown) == all.GroupsTotal {
		t.Errorf("filtered by persona %q: the page lists %v, want %v", pair, shown, wantIDs)
	}
	if mainText = text("#main"); !strings.Contains(mainText, fmt.Sprintf("%d of %d groups match", want.GroupsMatched, want.GroupsTotal)) {
		t.Errorf("the filtered page does not say %d of %d groups match", want.GroupsMatched, want.GroupsTotal)
	}
	browsertest.Screenshot(t, ctx, art, "7-filtered")

	// The rollout output: its summary and its one file's groups.
	do("the rollout output", chromedp.Evaluate[chromedp.Void](`location.hash = "#/run/1"`), chromedp.WaitVisible(css("table.summary")),
		chromedp.Click(css(`a.step[href="#/run/1/step/0"]`)), chromedp.WaitVisible(css("table.groups")))
	browsertest.Screenshot(t, ctx, art, "7b-rollout-output")
	if got := text("h1"); !strings.Contains(got, "rollout output") {
		t.Errorf("the rollout output's groups page is titled %q", got)
	}

	// The export, opened from file:// with networking off and no server.
	export := filepath.Join(t.TempDir(), "view.html")
	f, err := os.Create(export)
	if err != nil {
		t.Fatal(err)
	}
	// Exported with a persona filter: the pair of the batch rollout's group.
	idPair := ""
	for _, g := range all.Groups {
		for _, m := range g.Members {
			if m.RolloutID == id {
				idPair = g.PersonaPairID
			}
		}
	}
	var inExport groupsAnswer
	get(t, s.Handler(), view.GroupsURL(0, step, view.Filter{Persona: idPair}, 0), &inExport)
	if _, err := s.Export(f, view.ExportOptions{From: step, To: step, Filter: view.Filter{Persona: idPair}}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	ts.Close()
	ctx = browsertest.New(t, browsertest.Options{Offline: true})
	do("the export's overview", chromedp.Navigate("file://"+export+"#/run/0"), chromedp.WaitVisible(css(point)))
	if mode := text("#mode"); !strings.Contains(mode, "exported snapshot") {
		t.Errorf("the export's header says %q, want it to say it is an exported snapshot", mode)
	}
	browsertest.Screenshot(t, ctx, art, "8-export-overview")
	do("the export's groups", chromedp.Click(css(point)), chromedp.WaitVisible(css(member)))
	if got := text("p.meta"); !strings.Contains(got, fmt.Sprintf("%d of %d groups match", inExport.GroupsMatched, inExport.GroupsTotal)) {
		t.Errorf("the export's groups page, filtered by persona %q, says %q, want %d of %d groups", idPair, got, inExport.GroupsMatched, inExport.GroupsTotal)
	}
	do("the export's dialogue", chromedp.Click(css(member)), chromedp.WaitVisible(css(".tokens .tok")))
	checkMasks(t, "exported", browsertest.Eval[[]pageSeq](t, ctx, readSeqs), rows)
	browsertest.Screenshot(t, ctx, art, "9-export-dialogue")
	outside := 1 + step%3
	do("a step outside the export", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = "#/run/0/step/%d"`, outside)), chromedp.WaitVisible(css(".error")))
	if missing := text(".error"); !strings.Contains(missing, "Not in this export") {
		t.Errorf("step %d, outside the export's step %d, shows %q", outside, step, missing)
	}
}
