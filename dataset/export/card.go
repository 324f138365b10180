package export

import (
	"fmt"
	"strings"
)

// datasetCard renders README.md for an HF export: YAML front matter with
// the configs and features, then a description of the data and its schema,
// with scores labelled by the scale they were given on.
func datasetCard(opts Options, source string, stats Stats) string {
	var b strings.Builder
	b.WriteString("---\nconfigs:\n- config_name: default\n  data_files:\n  - split: train\n    path: data/train-*\ndataset_info:\n")
	b.WriteString(featuresYAML())
	b.WriteString("tags:\n- parley\n- rlaif\n- self-play\n- negotiation\n---\n\n")
	title := source[strings.LastIndex(source, " `")+1:] // the run, directory or last file
	fmt.Fprintf(&b, "# parley rollouts: %s\n\n", strings.Trim(title, "`"))
	files := fmt.Sprintf("%d files", stats.Files)
	if stats.Files == 1 {
		files = "1 file"
	}
	fmt.Fprintf(&b, "Rollouts exported by `parley export` from %s (%s)", source, files)
	if stats.Written > 0 {
		fmt.Fprintf(&b, ", steps %d to %d", stats.FirstStep, stats.LastStep)
	}
	fmt.Fprintf(&b, ".\n%d rollouts read, %d exported", stats.Read, stats.Written)
	var filters []string
	if !opts.IncludeFailed {
		filters = append(filters, fmt.Sprintf("failed rollouts excluded (%d)", stats.SkippedFailed))
	}
	if opts.MinStep > 0 || opts.MaxStep > 0 {
		filters = append(filters, fmt.Sprintf("steps %d to %s", opts.MinStep, maxStepString(opts.MaxStep)))
	}
	if opts.AgreedOnly {
		filters = append(filters, "only dialogues that reached agreement")
	}
	if opts.MinReward != nil {
		filters = append(filters, fmt.Sprintf("reward ≥ %g", *opts.MinReward))
	}
	if opts.Role != "" {
		f := "the " + opts.Role + "'s chat"
		if len(opts.Models) > 0 {
			f += " played by " + strings.Join(opts.Models, ", ")
		}
		for _, c := range opts.Where {
			f += ", " + c.String()
		}
		if !opts.Traces {
			f += ", private traces dropped"
		}
		filters = append(filters, f)
	}
	if len(filters) > 0 {
		fmt.Fprintf(&b, "; filters: %s", strings.Join(filters, "; "))
	}
	b.WriteString(".\n\n")
	scale := "not recorded"
	if len(stats.Scales) > 0 {
		scale = strings.Join(stats.Scales, ", ")
	}
	fmt.Fprintf(&b, "Scores: %s (the `score_scale` column names each row's).\n\n", scale)
	b.WriteString(cardSchema)
	return b.String()
}

// cardSchema is the dataset card's description of the rows: a table of
// the columns (every column of Record, a test checks) and the messages
// scheme.
const cardSchema = `Each row is one rollout: two copies of the policy with opposed personas
negotiate a task (or, for the single-agent baseline, one agent answers it),
then a final completion is scored by the run's judge.

## Schema

Every row has every column; a value that does not apply is null. A rollout
that was not judged (its judging failed, or it was never scored) has null
score, reward and advantage: never a score of 0.

| column | type | meaning |
|---|---|---|
| ` + "`id`, `run_id`" + ` | string | rollout id, run id |
| ` + "`step`, `policy_version`" + ` | int32 | training step that sampled it; the policy version (adapter) that played it |
| ` + "`env`" + ` | string | environment (game) |
| ` + "`prompt_id`, `group_id`" + ` | string | curriculum prompt and GRPO group |
| ` + "`category`" + ` | string | professional, interpersonal, micro_ethics or open_ended |
| ` + "`split`" + ` | string | the prompt's curriculum split (train, eval) |
| ` + "`task`" + ` | string | the dilemma or question |
| ` + "`persona_pair_id`" + ` | string | the persona pair's id in the library |
| ` + "`personas`" + ` | struct<a, b, name_a, name_b> | the personas of agents A and B and their short names (null for single-agent) |
| ` + "`messages`" + ` | list<struct<role, name, content>> | the system prompts and the dialogue as chat messages, see below |
| ` + "`final`" + ` | string | the final completion that was judged |
| ` + "`agreed`" + ` | bool | whether both agents agreed before the round limit |
| ` + "`rounds`" + ` | int32 | negotiation rounds |
| ` + "`judged`" + ` | bool | whether the judge (or scorer) gave a score |
| ` + "`judge_model`, `judge_rationale`" + ` | string | the judge model or rule, and its explanation |
| ` + "`judge_error`" + ` | string | why judging failed |
| ` + "`score`" + ` | float32 | judge score, on the scale in ` + "`score_scale`" + ` |
| ` + "`score_scale`" + ` | string | what scored it and its range: ` + "`CA 1–5`" + ` (Collective Agency rubric), ` + "`rule <kind> 0–1`" + `, a game's scorer |
| ` + "`reward`" + ` | float32 | reward used for training (of the first trained role) |
| ` + "`advantage`" + ` | float32 | its group-relative advantage |
| ` + "`failed`, `error`" + ` | bool, string | whether the rollout failed, and why |

## Messages

Every message has the keys role, name and content (name null when it has
none). First the system prompt of each role that had one, in the order
the roles first spoke: ` + "`{role: \"system\", name: role, content: prompt}`" + `. Then
the task, ` + "`{role: \"user\", name: null, content: task}`" + `. Each turn follows in
order as ` + "`{role: \"assistant\", name: agent, content: text}`" + `, where ` + "`name`" + ` is
the agent that spoke: ` + "`A`" + ` or ` + "`B`" + ` in the deliberation game, ` + "`single`" + ` for
the single-agent baseline, ` + "`final`" + ` for the final completion. The final
completion is also in ` + "`final`" + `.
`
