package config

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/textfile"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"gopkg.in/yaml.v3"
)

// EnvPrefix prefixes every environment variable that overrides a config key:
// run.seed is PARLEY_RUN_SEED.
const EnvPrefix = "PARLEY"

// Load reads the config: the defaults, then the YAML file at path (if not
// empty), then PARLEY_* environment variables, then the flags of fs that
// were set and whose names are keys ("run.seed") or that appear in
// overrides' values; curriculum.path, if none of them gave it, is the
// configured game's default curriculum. It validates the result. Unknown keys and wrong types
// are errors naming the file, line and key path.
//
// A validation error starts with where the bad value came from: the file
// and line of its key ("configs/x.yaml:12: key sampling.top_p: …"), the
// flag or the environment variable; the file alone for a key it does not
// set.
func Load(path string, fs *pflag.FlagSet) (Config, error) {
	cfg := Default()
	cfg.given, cfg.origin, cfg.file = map[string]bool{}, map[string]string{}, path
	if path != "" {
		data, err := textfile.ReadFile(path)
		if err != nil {
			return cfg, fmt.Errorf("config: read %s: %w", path, err)
		}
		if err := decodeStrict(data, &cfg); err != nil {
			return cfg, fmt.Errorf("config %s: %w", path, err)
		}
	}
	if err := applyOverrides(&cfg, fs); err != nil {
		return cfg, err
	}
	if err := checkEnv(cfg, os.Environ()); err != nil {
		return cfg, err
	}
	cfg.useGameCurriculum()
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("config: %w", err)
	}
	return cfg, nil
}

// OwnEnv are the PARLEY_* environment variables that are not config keys:
// those parley's tools, the Makefile, deploy/slurm/parley.sbatch, the
// trainer and the tests read. Load refuses any other PARLEY_* variable
// that no key and no *_env key names (checkEnv).
var OwnEnv = []string{
	"PARLEY_BIN", "PARLEY_CONFIG", "PARLEY_CRASH_AT", "PARLEY_GPUS_PER_NODE", "PARLEY_HANDSHAKE_TOKEN",
	"PARLEY_MAX_LORA_RANK", "PARLEY_MODEL", "PARLEY_NO_UV", "PARLEY_PYTHON", "PARLEY_RDZV_PORT",
	"PARLEY_REQUIRE_BROWSER", "PARLEY_REQUIRE_VLLM", "PARLEY_SERVED_MODEL", "PARLEY_TINY_MODEL", "PARLEY_TRAINER_TOKEN",
	"PARLEY_VLLM_LOG", "PARLEY_VLLM_MODEL", "PARLEY_VLLM_NODES", "PARLEY_VLLM_PORT",
	"PARLEY_VLLM_STARTED_URL", "PARLEY_VLLM_START_TIMEOUT", "PARLEY_VLLM_URL",
	// the tests'
	"PARLEY_AFFINITY_URLS", "PARLEY_EXPORT_FIXTURE_DIR", "PARLEY_KEEP_REPORT", "PARLEY_PARQUET_FIXTURE_DIR",
}

// ownEnvPrefixes start the tests' and benchmarks' own PARLEY_* variables.
var ownEnvPrefixes = []string{"PARLEY_TEST_", "PARLEY_BENCH_", "PARLEY_CONTRACT_", "PARLEY_E2E_", "PARLEY_VIEW_"}

// checkEnv refuses a PARLEY_* variable of environ that is neither a
// config key's (EnvName), nor one of OwnEnv, nor named by one of cfg's
// *_env keys (a token or an API key): a misspelled override
// (PARLEY_TRAIN_STEP for PARLEY_TRAIN_STEPS) would otherwise change
// nothing and say nothing, as an unknown key in the file would. The error
// names the known variables of the section the name starts with.
func checkEnv(cfg Config, environ []string) error {
	known := map[string]bool{}
	var keyVars []string
	for _, k := range Keys() {
		known[EnvName(k)] = true
		keyVars = append(keyVars, EnvName(k))
	}
	for _, n := range OwnEnv {
		known[n] = true
	}
	namedEnv(reflect.ValueOf(cfg), "", known)
	var errs []error
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, EnvPrefix+"_") || known[name] || slices.ContainsFunc(ownEnvPrefixes, func(p string) bool { return strings.HasPrefix(name, p) }) {
			continue
		}
		errs = append(errs, fmt.Errorf("config: environment variable %s sets no config key (a key's variable is %s_ and its path in capitals, run.seed's %s): %s",
			name, EnvPrefix, EnvName("run.seed"), nearEnv(name, keyVars)))
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errors.Join(errs...)
}

// nearEnv names the key variables of the longest section that name
// starts with ("the known PARLEY_TRAIN_* are …"), or where to find them.
func nearEnv(name string, vars []string) string {
	parts := strings.Split(name, "_")
	for i := len(parts) - 1; i >= 2; i-- {
		prefix := strings.Join(parts[:i], "_") + "_"
		var near []string
		for _, v := range vars {
			if strings.HasPrefix(v, prefix) {
				near = append(near, v)
			}
		}
		if len(near) > 0 {
			return "the known " + prefix + "* are " + strings.Join(near, ", ")
		}
	}
	return "parley config keys lists the keys"
}

// namedEnv adds to names the value of every string field of v whose YAML
// name ends in _env (train.token_env, policy.api_key_env, a role's
// api_key_env…): the variables that the config names for secrets.
func namedEnv(v reflect.Value, name string, names map[string]bool) {
	switch v.Kind() {
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			if t.Field(i).IsExported() {
				namedEnv(v.Field(i), yamlName(t.Field(i)), names)
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			namedEnv(it.Value(), name, names)
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			namedEnv(v.Index(i), name, names)
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			namedEnv(v.Elem(), name, names)
		}
	case reflect.String:
		if strings.HasSuffix(name, "_env") && v.String() != "" {
			names[v.String()] = true
		}
	}
}

// Parse decodes YAML bytes over the defaults and validates the result; it is
// Load without a file, environment or flags. Validation errors of keys the
// bytes set name their line ("line 12: key …").
func Parse(data []byte) (Config, error) {
	cfg := Default()
	cfg.given, cfg.origin = map[string]bool{}, map[string]string{}
	if err := decodeStrict(data, &cfg); err != nil {
		return cfg, fmt.Errorf("config: %w", err)
	}
	cfg.useGameCurriculum()
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("config: %w", err)
	}
	return cfg, nil
}

// decodeStrict decodes data into cfg, rejecting unknown keys, type
// mismatches and numbers that are not whole for integer keys, each with its
// line and key path; it records the keys given and their lines.
func decodeStrict(data []byte, cfg *Config) error {
	return strictDecode(data, cfg, "of sections", func(doc *yaml.Node) {
		if cfg.given != nil {
			givenKeys(doc, "", cfg.given)
		}
		if cfg.origin != nil {
			keyLines(doc, "", func(key string, line int) {
				if cfg.file != "" {
					cfg.origin[key] = fmt.Sprintf("%s:%d", cfg.file, line)
				} else {
					cfg.origin[key] = fmt.Sprintf("line %d", line)
				}
			})
		}
	})
}

// strictDecode is the one strict decoder of parley's YAML files (the run
// config, a tournament file): it decodes data over out, a pointer to a
// struct holding the defaults, rejecting unknown keys (checkKeys), type
// mismatches and numbers that are not whole for integer keys, each with
// its line and key path. seen, if not nil, is given the document's top
// mapping once its keys are checked; top says what the top level maps
// ("of sections"). An empty document keeps the defaults.
func strictDecode(data []byte, out any, top string, seen func(doc *yaml.Node)) error {
	data = textfile.StripBOM(data)
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return fmt.Errorf("invalid YAML: %w", err)
	}
	if len(root.Content) == 0 {
		return nil // an empty file keeps the defaults
	}
	doc := root.Content[0]
	if doc.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: the top level must be a mapping %s", doc.Line, top)
	}
	if err := checkKeys(doc, reflect.TypeOf(out).Elem(), ""); err != nil {
		return err
	}
	if seen != nil {
		seen(doc)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("%s", strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:"), "yaml: ")))
	}
	return nil
}

// checkKeys walks a mapping node against a struct type and reports the
// first unknown key with its full path, line and the keys that are known.
func checkKeys(n *yaml.Node, t reflect.Type, prefix string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Map && t.Elem().Kind() == reflect.Struct && n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := checkKeys(n.Content[i+1], t.Elem(), prefix+"."+n.Content[i].Value); err != nil {
				return err
			}
		}
		return nil
	}
	if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct && n.Kind == yaml.SequenceNode {
		for i, item := range n.Content {
			if err := checkKeys(item, t.Elem(), fmt.Sprintf("%s[%d]", prefix, i)); err != nil {
				return err
			}
		}
		return nil
	}
	if t.Kind() != reflect.Struct || n.Kind != yaml.MappingNode {
		return nil
	}
	if t == reflect.TypeOf(Game{}) {
		return gameKeys(n, Default().Game)
	}
	fields := map[string]reflect.Type{}
	keyTypes(t, fields)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		path := k.Value
		if prefix != "" {
			path = prefix + "." + k.Value
		}
		ft, ok := fields[k.Value]
		if !ok {
			known := make([]string, 0, len(fields))
			for name := range fields {
				known = append(known, name)
			}
			sort.Strings(known)
			return fmt.Errorf("line %d: unknown key %q (known keys here: %s)", k.Line, path, strings.Join(known, ", "))
		}
		if err := checkKeys(v, ft, path); err != nil {
			return err
		}
		if err := checkValue(v, ft, path); err != nil {
			return err
		}
	}
	return nil
}

// checkValue reports a value of key path that does not decode into t
// ("line 34: key sampling.top_p: cannot unmarshal !!str `abc` into
// float64") or a number that is not whole where t wants an integer (YAML
// would truncate it: group_size: 4.7 would be 4).
func checkValue(n *yaml.Node, t reflect.Type, path string) error {
	if t == reflect.TypeOf(Game{}) {
		return nil // gameKeys checks each section against its own type
	}
	if err := checkWhole(n, t, path); err != nil {
		return err
	}
	if err := n.Decode(reflect.New(t).Interface()); err != nil {
		var te *yaml.TypeError
		if !errors.As(err, &te) || len(te.Errors) == 0 {
			return fmt.Errorf("line %d: key %s: %w", n.Line, path, err)
		}
		line, msg, ok := strings.Cut(te.Errors[0], ": ")
		if !ok || !strings.HasPrefix(line, "line ") {
			line, msg = fmt.Sprintf("line %d", n.Line), te.Errors[0]
		}
		return fmt.Errorf("%s: key %s: %s", line, path, msg)
	}
	return nil
}

// checkWhole reports a number that is not whole given for an integer (or
// a duration) of type t, in n or in the items and values of lists and
// maps of integers.
func checkWhole(n *yaml.Node, t reflect.Type, path string) error {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		for i, item := range n.Content {
			if err := checkWhole(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case t.Kind() == reflect.Map && n.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := checkWhole(n.Content[i+1], t.Elem(), path+"."+n.Content[i].Value); err != nil {
				return err
			}
		}
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!float" && (t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64 || t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64):
		if t == reflect.TypeOf(time.Duration(0)) {
			return fmt.Errorf("line %d: key %s: want a duration such as 30s, got %s", n.Line, path, n.Value)
		}
		if f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64); err != nil || f != math.Trunc(f) {
			return fmt.Errorf("line %d: key %s: want an integer, got %s", n.Line, path, n.Value)
		}
	}
	return nil
}

// givenKeys records the key path of every mapping entry under n.
func givenKeys(n *yaml.Node, prefix string, out map[string]bool) {
	if n.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		path := n.Content[i].Value
		if prefix != "" {
			path = prefix + "." + path
		}
		out[path] = true
		givenKeys(n.Content[i+1], path, out)
	}
}

// keyLines calls set with the key path and line of every mapping key and
// sequence item under n ("policy.endpoints[1]" for the second endpoint).
func keyLines(n *yaml.Node, prefix string, set func(key string, line int)) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			path := n.Content[i].Value
			if prefix != "" {
				path = prefix + "." + path
			}
			set(path, n.Content[i].Line)
			keyLines(n.Content[i+1], path, set)
		}
	case yaml.SequenceNode:
		for i, item := range n.Content {
			path := fmt.Sprintf("%s[%d]", prefix, i)
			set(path, item.Line)
			keyLines(item, path, set)
		}
	}
}

// keyTypes adds to fields the type of every key of struct type t, the
// keys of its inline fields included.
func keyTypes(t reflect.Type, fields map[string]reflect.Type) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if inline(f) {
			keyTypes(f.Type, fields)
		} else if name := yamlName(f); name != "" {
			fields[name] = f.Type
		}
	}
}

// inline reports whether f's keys are its parent's (`yaml:",inline"`,
// as the judge's and the generator's ChatEndpoint).
func inline(f reflect.StructField) bool {
	_, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	t := f.Type
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return slices.Contains(strings.Split(opts, ","), "inline") && t.Kind() == reflect.Struct
}

func yamlName(f reflect.StructField) string {
	tag := f.Tag.Get("yaml")
	name, _, _ := strings.Cut(tag, ",")
	if name == "-" {
		return ""
	}
	return name
}

// leaf is one settable config key.
type leaf struct {
	key string
	v   reflect.Value
}

// leaves lists every leaf key of cfg (structs are walked, everything else is
// a leaf), in declaration order.
func leaves(v reflect.Value, prefix string, out []leaf) []leaf {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if inline(t.Field(i)) {
			out = leaves(v.Field(i), prefix, out)
			continue
		}
		name := yamlName(t.Field(i))
		if name == "" {
			continue
		}
		key := name
		if prefix != "" {
			key = prefix + "." + name
		}
		fv := v.Field(i)
		if g, ok := fv.Interface().(Game); ok {
			out = append(out, leaf{key: key + ".env", v: fv.FieldByName("Env")})
			out = gameLeaves(g, out)
			continue
		}
		if fv.Kind() == reflect.Struct && fv.Type() != reflect.TypeOf(time.Duration(0)) {
			out = leaves(fv, key, out)
			continue
		}
		out = append(out, leaf{key: key, v: fv})
	}
	return out
}

// Keys returns every leaf key path, for flag registration and docs.
func Keys() []string {
	cfg := Default()
	var keys []string
	for _, l := range leaves(reflect.ValueOf(&cfg).Elem(), "", nil) {
		keys = append(keys, l.key)
	}
	return keys
}

// EnvName is the environment variable that overrides key.
func EnvName(key string) string {
	return EnvPrefix + "_" + strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(key))
}

// applyOverrides applies PARLEY_* environment variables and then the set
// flags of fs named like keys, through viper.
func applyOverrides(cfg *Config, fs *pflag.FlagSet) error {
	v := viper.New()
	ls := leaves(reflect.ValueOf(cfg).Elem(), "", nil)
	for _, l := range ls {
		if err := v.BindEnv(l.key, EnvName(l.key)); err != nil {
			return fmt.Errorf("config: bind %s: %w", l.key, err)
		}
		if fs != nil {
			if f := fs.Lookup(l.key); f != nil && f.Changed {
				if err := v.BindPFlag(l.key, f); err != nil {
					return fmt.Errorf("config: bind flag --%s: %w", l.key, err)
				}
			}
		}
	}
	for _, l := range ls {
		if !v.IsSet(l.key) {
			continue
		}
		src := "environment variable " + EnvName(l.key)
		if fs != nil {
			if f := fs.Lookup(l.key); f != nil && f.Changed {
				src = "flag --" + l.key
			}
		}
		if err := setFromString(l.v, v.GetString(l.key)); err != nil {
			return fmt.Errorf("config: %s: key %s: %w", src, l.key, err)
		}
		if cfg.given != nil {
			cfg.given[l.key] = true
		}
		if cfg.origin != nil {
			// The file's lines of this key and its items no longer hold.
			for k := range cfg.origin {
				if strings.HasPrefix(k, l.key+"[") || strings.HasPrefix(k, l.key+".") {
					delete(cfg.origin, k)
				}
			}
			cfg.origin[l.key] = src
		}
	}
	return nil
}

// setFromString parses s into the leaf value v.
func setFromString(v reflect.Value, s string) error {
	s = strings.TrimSpace(s)
	switch {
	case v.Type() == reflect.TypeOf(time.Duration(0)):
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("want a duration such as 30s, got %q", s)
		}
		v.SetInt(int64(d))
	case v.Kind() == reflect.String:
		v.SetString(s)
	case v.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("want true or false, got %q", s)
		}
		v.SetBool(b)
	case v.Kind() >= reflect.Int && v.Kind() <= reflect.Int64:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("want an integer, got %q", s)
		}
		v.SetInt(n)
	case v.Kind() == reflect.Float64:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("want a number, got %q", s)
		}
		v.SetFloat(f)
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.String:
		var parts []string
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				parts = append(parts, p)
			}
		}
		v.Set(reflect.ValueOf(parts))
	case v.Kind() == reflect.Map:
		// key=value,key=value for map[string]float64
		m := reflect.MakeMap(v.Type())
		for _, p := range strings.Split(s, ",") {
			k, val, ok := strings.Cut(strings.TrimSpace(p), "=")
			if !ok {
				return fmt.Errorf("want key=value pairs separated by commas, got %q", s)
			}
			f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
			if err != nil {
				return fmt.Errorf("want a number for %q, got %q", k, val)
			}
			m.SetMapIndex(reflect.ValueOf(strings.TrimSpace(k)), reflect.ValueOf(f))
		}
		v.Set(m)
	default:
		return errors.New("this key cannot be set from a string")
	}
	return nil
}

// RegisterFlags adds one flag per config key to fs (hidden from the short
// help), so that --run.seed=7 overrides the file and the environment.
func RegisterFlags(fs *pflag.FlagSet) {
	for _, key := range Keys() {
		fs.String(key, "", "override config key "+key)
		_ = fs.MarkHidden(key)
	}
}

// Change is one config key whose value differs between two configs.
type Change struct {
	Key      string
	Old, New string
}

// operationalKeys are the keys that may change when a run resumes: where
// the servers are and how parley talks to them, how long and how hard it
// works, how it logs. Every other key changes what is sampled or trained
// (seed, group size, game, curriculum, models, judge, advantage, mask, the
// trainer's hyperparameters) and is frozen with the run. A key ending in
// "." covers its section.
var operationalKeys = []string{
	"run.dir", "run.name", // they name the directory the run is already in
	"policy.endpoints", "policy.api_key_env", "policy.max_concurrent_per_endpoint", "policy.request_timeout",
	"policy.max_retries", "policy.health_interval", "policy.session_header", "policy.session_bound", "policy.resolve_interval",
	"rollout.concurrency",
	"judge.api_key_env", "judge.concurrency", "judge.requests_per_minute", "judge.tokens_per_minute",
	"judge.max_retries", "judge.timeout",
	"generator.",
	"train.steps", "train.http_addr", "train.metrics_addr", "train.token_env", "train.trainer_timeout", "train.trainer_command",
	"train.server_command", "train.max_failed_fraction", "train.server_start_timeout",
	"trainer.report_to",  // where metrics go, not what is trained
	"train.weight_sync.", // how the weights travel, not what is trained
	"log.",
}

// Operational reports whether key may change when a run resumes.
func Operational(key string) bool {
	for _, k := range operationalKeys {
		if key == k || (strings.HasSuffix(k, ".") && strings.HasPrefix(key, k)) {
			return true
		}
	}
	return false
}

// Changes lists the keys whose values differ from a to b, in key order,
// split into the operational ones (Operational) and the others.
func Changes(a, b Config) (operational, frozen []Change) {
	la := leaves(reflect.ValueOf(&a).Elem(), "", nil)
	lb := leaves(reflect.ValueOf(&b).Elem(), "", nil)
	vb := map[string]reflect.Value{}
	for _, l := range lb {
		vb[l.key] = l.v
	}
	for _, l := range la {
		w, ok := vb[l.key]
		if !ok || sameValue(l.v.Interface(), w.Interface()) {
			continue
		}
		c := Change{Key: l.key, Old: show(l.v), New: show(w)}
		if Operational(l.key) {
			operational = append(operational, c)
		} else {
			frozen = append(frozen, c)
		}
	}
	if !sameValue(a.Roles, b.Roles) {
		frozen = append(frozen, Change{Key: "roles", Old: fmt.Sprint(a.Roles), New: fmt.Sprint(b.Roles)})
	}
	return operational, frozen
}

// sameValue reports whether two config values are the same as YAML would
// write them: a nil map or slice equals an empty one (a frozen config read
// back has empty maps where a loaded one has none).
func sameValue(x, y any) bool {
	if reflect.DeepEqual(x, y) {
		return true
	}
	bx, errX := yaml.Marshal(x)
	by, errY := yaml.Marshal(y)
	return errX == nil && errY == nil && bytes.Equal(bx, by)
}

// show renders a config value for a message.
func show(v reflect.Value) string {
	if v.Kind() == reflect.Slice && v.Len() == 0 {
		return "[]"
	}
	return fmt.Sprint(v.Interface())
}
