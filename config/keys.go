package config

//go:generate go run ./internal/keydocs/cmd

import (
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"
)

// KeyInfo describes one config key: its path, type, default and doc (the
// comment of its field in the source, through the generated fieldDocs).
type KeyInfo struct {
	Key, Type, Default, Doc string
}

// KeyInfos describes every leaf key of the config, registered games'
// sections included, in declaration order.
func KeyInfos() []KeyInfo {
	cfg := Default()
	var out []KeyInfo
	walkKeys(reflect.ValueOf(&cfg).Elem(), "", func(key string, sf reflect.StructField, owner reflect.Type, v reflect.Value) {
		out = append(out, KeyInfo{
			Key: key, Type: typeName(sf.Type), Default: show(v),
			Doc: fieldDocs[owner.PkgPath()+"."+owner.Name()+"."+sf.Name],
		})
	})
	return out
}

// walkKeys calls fn for every leaf key under v (a struct), with its field
// and the struct type that declares it.
func walkKeys(v reflect.Value, prefix string, fn func(key string, sf reflect.StructField, owner reflect.Type, v reflect.Value)) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if inline(sf) {
			walkKeys(v.Field(i), prefix, fn)
			continue
		}
		name := yamlName(sf)
		if name == "" {
			continue
		}
		key := name
		if prefix != "" {
			key = prefix + "." + name
		}
		fv := v.Field(i)
		if g, ok := fv.Interface().(Game); ok {
			fn(key+".env", t2f(reflect.TypeOf(g), "Env"), reflect.TypeOf(g), fv.FieldByName("Env"))
			for _, name := range g.sectionNames() {
				sec := reflect.ValueOf(g.Sections[name]).Elem()
				walkKeys(sec, key+"."+name, fn)
			}
			continue
		}
		if fv.Kind() == reflect.Struct && fv.Type() != reflect.TypeOf(time.Duration(0)) {
			walkKeys(fv, key, fn)
			continue
		}
		fn(key, sf, t, fv)
	}
}

func t2f(t reflect.Type, name string) reflect.StructField {
	f, _ := t.FieldByName(name)
	return f
}

// typeName is a key's type as a user writes it.
func typeName(t reflect.Type) string {
	switch {
	case t == reflect.TypeOf(time.Duration(0)):
		return "duration"
	case t.Kind() == reflect.Slice:
		return "list of " + typeName(t.Elem())
	case t.Kind() == reflect.Map:
		return "map of " + typeName(t.Key()) + " to " + typeName(t.Elem())
	case t.Kind() == reflect.Struct:
		return "mapping"
	case t.Kind() == reflect.Float64 || t.Kind() == reflect.Float32:
		return "number"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		return "integer"
	case t.Kind() == reflect.Bool:
		return "boolean"
	}
	return t.Kind().String()
}

// WriteKeysMarkdown writes the key reference as a markdown table
// (docs/config.md is this output).
func WriteKeysMarkdown(w io.Writer) error {
	var b strings.Builder
	b.WriteString("# Configuration keys\n\n")
	b.WriteString("Generated from the config structs by `parley config keys --markdown`; do not edit.\n")
	b.WriteString("Every key can be set in the YAML file, by a `PARLEY_<KEY>` environment variable\n")
	b.WriteString("(dots and dashes become `_`, e.g. `PARLEY_RUN_SEED`) or by a `--<key>=value` flag.\n\n")
	b.WriteString("| key | type | default | meaning |\n|---|---|---|---|\n")
	for _, k := range KeyInfos() {
		fmt.Fprintf(&b, "| `%s` | %s | `%s` | %s |\n", k.Key, k.Type, strings.ReplaceAll(k.Default, "|", "\\|"), strings.ReplaceAll(k.Doc, "|", "\\|"))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
