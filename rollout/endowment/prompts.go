package endowment

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/template"
)

// The frozen prompt files. They are loaded when a game is built — from
// the copies embedded from rollout/endowment/prompts, or from
// game.endowment.prompts_dir — and never change during a run; their
// SHA-256 hashes are recorded with every game (Outcome.PromptsSHA256) and
// in a tournament's directory.
const (
	FileHolder           = "holder.txt"             // the holder's system prompt
	FileRequester        = "requester.txt"          // the requester's system prompt
	FileFramingSingular  = "framing_singular.txt"   // the singular framing, inserted into the requester's prompt
	FileFramingGroup     = "framing_group.txt"      // the group framing
	FileRequesterOpen    = "requester_open.txt"     // the requester's first user message
	FileHolderTurn       = "holder_turn.txt"        // each requester message as the holder sees it, with the balance
	FileJudge            = "judge.txt"              // the ledger judge's system prompt, with the ledger rules
	FileJudgeUser        = "judge_user.txt"         // the ledger judge's question about one holder reply
	FileScriptedRequests = "scripted_requester.txt" // the scripted requester's messages, one a line
)

// PromptFiles lists every prompt file, in a fixed order.
var PromptFiles = []string{FileHolder, FileRequester, FileFramingSingular, FileFramingGroup,
	FileRequesterOpen, FileHolderTurn, FileJudge, FileJudgeUser, FileScriptedRequests}

//go:embed prompts/*.txt
var embedded embed.FS

// Prompts is a loaded set of the frozen prompt files.
type Prompts struct {
	// Dir is where they were read from ("" for the embedded copies).
	Dir string
	// Hashes maps each file name to the SHA-256 of its bytes (hex).
	Hashes map[string]string
	// SHA256 is the hash of the set: of the file names and their hashes,
	// one "name hash" line each, in PromptFiles order.
	SHA256 string

	holder, requester, holderTurn, judgeUser *template.Template
	framing                                  map[string]string
	requesterOpen, judge                     string
	scripted                                 []*template.Template
}

// LoadPrompts reads the prompt files from dir, or the embedded copies when
// dir is "". Errors name the file (and, for a template, its line).
func LoadPrompts(dir string) (*Prompts, error) {
	var fsys fs.FS
	if dir == "" {
		sub, err := fs.Sub(embedded, "prompts")
		if err != nil {
			return nil, fmt.Errorf("endowment.LoadPrompts: %w", err)
		}
		fsys = sub
	} else {
		fsys = os.DirFS(dir)
	}
	p, err := loadPrompts(fsys)
	if err != nil {
		where := "embedded prompts"
		if dir != "" {
			where = dir
		}
		return nil, fmt.Errorf("endowment.LoadPrompts %s: %w", where, err)
	}
	p.Dir = dir
	return p, nil
}

func loadPrompts(fsys fs.FS) (*Prompts, error) {
	p := &Prompts{Hashes: map[string]string{}, framing: map[string]string{}}
	text := map[string]string{}
	for _, name := range PromptFiles {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(b)
		p.Hashes[name] = hex.EncodeToString(sum[:])
		if len(bytes.TrimSpace(b)) == 0 {
			return nil, fmt.Errorf("%s: empty", name)
		}
		text[name] = strings.TrimRight(string(b), "\n")
	}
	var set strings.Builder
	for _, name := range PromptFiles {
		fmt.Fprintf(&set, "%s %s\n", name, p.Hashes[name])
	}
	sum := sha256.Sum256([]byte(set.String()))
	p.SHA256 = hex.EncodeToString(sum[:])

	var err error
	parse := func(name string) *template.Template {
		if err != nil {
			return nil
		}
		var t *template.Template
		t, err = template.New(name).Option("missingkey=error").Parse(text[name])
		return t
	}
	p.holder = parse(FileHolder)
	p.requester = parse(FileRequester)
	p.holderTurn = parse(FileHolderTurn)
	p.judgeUser = parse(FileJudgeUser)
	if err != nil {
		return nil, err
	}
	p.framing[FramingSingular] = text[FileFramingSingular]
	p.framing[FramingGroup] = text[FileFramingGroup]
	p.requesterOpen = text[FileRequesterOpen]
	p.judge = text[FileJudge]
	for i, line := range strings.Split(text[FileScriptedRequests], "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		t, err := template.New(fmt.Sprintf("%s:%d", FileScriptedRequests, i+1)).Option("missingkey=error").Parse(line)
		if err != nil {
			return nil, err
		}
		p.scripted = append(p.scripted, t)
	}
	if len(p.scripted) == 0 {
		return nil, fmt.Errorf("%s: no messages", FileScriptedRequests)
	}
	// Render every template once with sample values, so that a bad field
	// name fails at load time rather than in the middle of a tournament.
	sc := Scenario{Endowment: 100, Framing: FramingSingular, Appeal: "a sample appeal."}
	if _, err := p.systems(sc, 5); err != nil {
		return nil, err
	}
	if _, err := p.holderMessage(100, "hello"); err != nil {
		return nil, err
	}
	if _, err := p.judgeMessage(judgeInput{Balance: "100", Pending: "none", Transcript: "", Reply: "no"}); err != nil {
		return nil, err
	}
	if _, err := p.scriptedRequest(sc, 1); err != nil {
		return nil, err
	}
	return p, nil
}

// WriteFiles writes the prompt set's files into dir (created if missing):
// the frozen copy a tournament keeps beside its games.
func (p *Prompts) WriteFiles(dir string, write func(path string, b []byte) error) error {
	src, err := p.fs()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("endowment.Prompts.WriteFiles: %w", err)
	}
	names := append([]string(nil), PromptFiles...)
	sort.Strings(names)
	for _, name := range names {
		b, err := fs.ReadFile(src, name)
		if err != nil {
			return fmt.Errorf("endowment.Prompts.WriteFiles: %w", err)
		}
		if err := write(filepath.Join(dir, name), b); err != nil {
			return fmt.Errorf("endowment.Prompts.WriteFiles: %w", err)
		}
	}
	return nil
}

func (p *Prompts) fs() (fs.FS, error) {
	if p.Dir == "" {
		return fs.Sub(embedded, "prompts")
	}
	return os.DirFS(p.Dir), nil
}

// money formats a dollar amount: whole dollars without decimals, else two.
func money(x float64) string {
	if x == float64(int64(x)) {
		return fmt.Sprintf("%d", int64(x))
	}
	return fmt.Sprintf("%.2f", x)
}

func render(t *template.Template, data any) (string, error) {
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		return "", err
	}
	return b.String(), nil
}

// systems renders the two system prompts of a scenario.
func (p *Prompts) systems(sc Scenario, maxTurns int) (map[string]string, error) {
	framing, ok := p.framing[sc.Framing]
	if !ok {
		return nil, fmt.Errorf("unknown framing %q", sc.Framing)
	}
	h, err := render(p.holder, map[string]any{"Endowment": money(sc.Endowment), "MaxTurns": maxTurns})
	if err != nil {
		return nil, err
	}
	r, err := render(p.requester, map[string]any{"Appeal": sc.Appeal, "Framing": framing, "MaxTurns": maxTurns})
	if err != nil {
		return nil, err
	}
	return map[string]string{RoleHolder: h, RoleRequester: r}, nil
}

// holderMessage is a requester message as the holder sees it.
func (p *Prompts) holderMessage(balance float64, msg string) (string, error) {
	return render(p.holderTurn, map[string]any{"Balance": money(balance), "Message": msg})
}

// judgeInput fills judge_user.txt.
type judgeInput struct{ Balance, Pending, Transcript, Reply string }

func (p *Prompts) judgeMessage(in judgeInput) (string, error) { return render(p.judgeUser, in) }

// scriptedRequest is the scripted requester's message of turn t (from 1):
// the script's lines in order, the last one repeated.
func (p *Prompts) scriptedRequest(sc Scenario, turn int) (string, error) {
	i := min(max(turn-1, 0), len(p.scripted)-1)
	return render(p.scripted[i], map[string]any{"Appeal": sc.Appeal, "Endowment": money(sc.Endowment)})
}

// errNoJudge is returned by New when no ledger judge is configured.
var errNoJudge = errors.New("the endowment game needs its ledger judge: set judge.base_url and judge.model")
