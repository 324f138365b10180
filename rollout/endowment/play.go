package endowment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/llm/chat"
	"github.com/parleyhq/parley/rollout"
)

// Ending reasons of a game.
const (
	EndTurnLimit    = "turn_limit"
	EndFinalRefusal = "final_refusal"
	EndExhausted    = "exhausted"
)

// noMessage stands in for a turn whose visible text is empty (all of it
// was private trace).
const noMessage = "(no message)"

// round is one requester message and the holder's reply.
type round struct {
	reqRaw, reqText   string  // as sampled (for the requester's own view) and visible
	holdRaw, holdText string  // likewise for the holder
	balance           float64 // B_t, shown to the holder with the requester's message
	holderDone        bool    // the holder replied in this round
}

// playerOf is implemented by rollout.Recorder: what plays a role.
type playerOf interface {
	Player(role string) rollout.Player
}

// Play implements rollout.Game.
func (g *Game) Play(ctx context.Context, p dataset.Prompt, agents rollout.Agents, rec *dataset.Rollout) error {
	sc, err := g.scenario(p)
	if err != nil {
		return fmt.Errorf("endowment: prompt %s: %w", p.ID, err)
	}
	sys, err := g.prompts.systems(sc, g.cfg.MaxTurns)
	if err != nil {
		return fmt.Errorf("endowment: prompt %s: %w", p.ID, err)
	}
	scripted := false
	if po, ok := agents.(playerOf); ok && po.Player(RoleRequester).Kind == dataset.PolicyScripted {
		scripted = true
	}
	led := NewLedger(sc.Endowment)
	out := &Outcome{Endowment: sc.Endowment, Framing: sc.Framing, Cause: sc.Cause, PromptsSHA256: g.prompts.SHA256, Ended: EndTurnLimit}
	var rounds []round
	turnOpts := rollout.TurnOptions{Kind: dataset.KindDialogue, MaxTokens: g.turnTokens}
	for t := 1; t <= g.cfg.MaxTurns; t++ {
		rounds = append(rounds, round{balance: led.Balance})
		cur := &rounds[len(rounds)-1]

		// The requester's message.
		if scripted {
			msg, err := g.prompts.scriptedRequest(sc, t)
			if err != nil {
				return fmt.Errorf("endowment: scripted requester: %w", err)
			}
			cur.reqRaw, cur.reqText = msg, msg
			rec.Turns = append(rec.Turns, dataset.Turn{Agent: RoleRequester, Text: msg, FinishReason: "scripted"})
		} else {
			reply, err := agents.Turn(ctx, RoleRequester, g.requesterView(sys[RoleRequester], rounds[:len(rounds)-1]), turnOpts)
			if err != nil {
				return fmt.Errorf("endowment: requester turn %d: %w", t, err)
			}
			cur.reqRaw, cur.reqText = rollout.TrimEndTokens(reply.Raw), visible(reply.Text)
			rec.Turns = append(rec.Turns, dataset.Turn{Agent: RoleRequester, Text: reply.Text, Tokens: int32(reply.Tokens), FinishReason: reply.FinishReason, WeightVersion: reply.WeightVersion})
			out.addTrace(RoleRequester, t, reply.Raw)
		}

		// The holder's reply, with its balance.
		view, err := g.holderView(sys[RoleHolder], rounds, false)
		if err != nil {
			return fmt.Errorf("endowment: holder turn %d: %w", t, err)
		}
		reply, err := agents.Turn(ctx, RoleHolder, view, turnOpts)
		if err != nil {
			return fmt.Errorf("endowment: holder turn %d: %w", t, err)
		}
		cur.holdRaw, cur.holdText, cur.holderDone = rollout.TrimEndTokens(reply.Raw), visible(reply.Text), true
		rec.Turns = append(rec.Turns, dataset.Turn{Agent: RoleHolder, Text: reply.Text, Tokens: int32(reply.Tokens), FinishReason: reply.FinishReason, WeightVersion: reply.WeightVersion})
		out.addTrace(RoleHolder, t, reply.Raw)

		// The ledger judge reads the visible reply.
		v, err := g.read(ctx, led, rounds, reply.Text)
		var e Entry
		switch {
		case err == nil:
			e = led.Apply(t, v)
		case errors.Is(err, chat.ErrInvalidReply):
			e = led.Unparsed(t, err)
			out.Unparsed++
			if out.Unparsed > g.cfg.MaxUnparsed {
				return fmt.Errorf("endowment: ledger judge: %d unparsed verdicts in one game, more than game.endowment.max_unparsed (%d); last: %w", out.Unparsed, g.cfg.MaxUnparsed, err)
			}
		default:
			return fmt.Errorf("endowment: ledger judge, holder turn %d: %w", t, err)
		}
		out.Cumulative = append(out.Cumulative, led.Transferred())
		if led.Balance <= 0 {
			out.Ended = EndExhausted
			break
		}
		if e.FinalRefusal && g.cfg.EndOnFinalRefusal {
			out.Ended = EndFinalRefusal
			break
		}
	}
	out.finish(led)
	views := map[string][]llm.Message{RoleRequester: g.requesterView(sys[RoleRequester], rounds)}
	if hv, err := g.holderView(sys[RoleHolder], rounds, true); err == nil {
		views[RoleHolder] = hv
	}
	out.Views = views
	rec.Rounds = int32(out.HolderTurns)
	b, err := json.Marshal(out)
	if err != nil {
		return fmt.Errorf("endowment: outcome: %w", err)
	}
	rec.Outcome = string(b)
	for i := range rec.Roles {
		switch rec.Roles[i].Role {
		case RoleHolder:
			rec.Roles[i].Outcome = fmt.Sprintf(`{"share_given":%g,"turn1_refusal":%t}`, out.Share, out.Turn1Refusal)
		case RoleRequester:
			rec.Roles[i].Outcome = fmt.Sprintf(`{"share_got":%g}`, out.Share)
		}
	}
	return nil
}

func visible(s string) string {
	if strings.TrimSpace(s) == "" {
		return noMessage
	}
	return s
}

// requesterView is the requester's conversation before its next message
// (or, with every round complete, its whole conversation): its own
// messages as sampled, the holder's replies as visible text. It never
// holds the balance or the holder's traces.
func (g *Game) requesterView(sys string, rounds []round) []llm.Message {
	msgs := []llm.Message{{Role: "system", Content: sys}, {Role: "user", Content: g.prompts.requesterOpen}}
	for _, r := range rounds {
		msgs = append(msgs, llm.Message{Role: "assistant", Content: r.reqRaw})
		if r.holderDone {
			msgs = append(msgs, llm.Message{Role: "user", Content: r.holdText})
		}
	}
	return msgs
}

// holderView is the holder's conversation: each requester message headed
// by the balance at that turn, its own replies as sampled. With complete
// set, the last round's reply is included (the whole conversation).
func (g *Game) holderView(sys string, rounds []round, complete bool) ([]llm.Message, error) {
	msgs := []llm.Message{{Role: "system", Content: sys}}
	for i, r := range rounds {
		m, err := g.prompts.holderMessage(r.balance, r.reqText)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, llm.Message{Role: "user", Content: m})
		if r.holderDone && (complete || i < len(rounds)-1) {
			msgs = append(msgs, llm.Message{Role: "assistant", Content: r.holdRaw})
		}
	}
	return msgs, nil
}

// read asks the ledger judge about the holder's last reply. An error
// matching chat.ErrInvalidReply means the judge's replies could not be
// read, retries included; any other is a failure of the judge itself.
func (g *Game) read(ctx context.Context, led *Ledger, rounds []round, reply string) (Verdict, error) {
	var tr strings.Builder
	for i, r := range rounds {
		fmt.Fprintf(&tr, "Requester: %s\n", r.reqText)
		if i < len(rounds)-1 {
			fmt.Fprintf(&tr, "Holder: %s\n", r.holdText)
		}
	}
	user, err := g.prompts.judgeMessage(judgeInput{Balance: money(led.Balance), Pending: led.PendingText(), Transcript: tr.String(), Reply: reply})
	if err != nil {
		return Verdict{}, err
	}
	check := reply
	if strings.TrimSpace(check) == "" {
		check = noMessage
	}
	resp, err := g.judge.Chat(ctx, chat.Request{
		Messages:   []chat.Message{{Role: "system", Content: g.prompts.judge}, {Role: "user", Content: user}},
		SchemaName: SchemaName,
		Schema:     json.RawMessage(VerdictSchema),
		MaxTokens:  g.cfg.JudgeMaxTokens,
		Validate: func(content string) error {
			_, err := ParseVerdict(content, check)
			return err
		},
	})
	if err != nil {
		return Verdict{}, err
	}
	return ParseVerdict(resp.Content, check)
}

var traceRE = regexp.MustCompile(`(?s)<think>(.*?)(?:</think>|$)`)

// Trace extracts the private deliberation of a sampled turn: the text of
// its <think> blocks (an unterminated one runs to the end), joined.
func Trace(raw string) string {
	var parts []string
	for _, m := range traceRE.FindAllStringSubmatch(raw, -1) {
		if t := strings.TrimSpace(m[1]); t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n\n")
}
