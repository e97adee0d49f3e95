// dshash: the upstream DisaggregatedSet revision hash and the Go JSON layout it depends on,
// from the upstream module itself (sigs.k8s.io/lws at the version pinned in versions.env).
//
//	dshash revision   reads DisaggregatedSet objects (JSON, one per line) on stdin and prints,
//	                  per line, the revision upstream's controller computes for it
//	dshash layout     prints the encoding/json layout of LeaderWorkerTemplate: for every Go
//	                  struct reachable from it, its JSON fields in encoding order with their
//	                  omitempty/omitzero options and types (lws_operator/api/go_layout.json)
//
// Built by build-bins.sh (target dshash) and used by the tests that check the operator's own
// implementation of the hash against upstream's; the operator never runs it.
package main

import (
	"bufio"
	"encoding"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	dsv1 "sigs.k8s.io/lws/api/disaggregatedset/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	dsutils "sigs.k8s.io/lws/pkg/utils/disaggregatedset"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: dshash revision|layout")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "revision":
		err = revisions()
	case "layout":
		err = layout()
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "dshash:", err)
		os.Exit(1)
	}
}

func revisions() error {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 0, 1<<20), 64<<20)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for in.Scan() {
		var ds dsv1.DisaggregatedSet
		if err := json.Unmarshal(in.Bytes(), &ds); err != nil {
			return fmt.Errorf("decoding a DisaggregatedSet: %w", err)
		}
		fmt.Fprintln(out, dsutils.ComputeRevision(ds.Spec.Roles))
	}
	return in.Err()
}

// Types encoded by their own MarshalJSON, by the name the Python encoder knows them by.
var marshalers = map[reflect.Type]string{
	reflect.TypeOf(resource.Quantity{}):   "quantity",
	reflect.TypeOf(metav1.Time{}):         "time",
	reflect.TypeOf(metav1.MicroTime{}):    "microtime",
	reflect.TypeOf(intstr.IntOrString{}):  "intorstring",
}

var (
	jsonMarshaler = reflect.TypeOf((*json.Marshaler)(nil)).Elem()
	textMarshaler = reflect.TypeOf((*encoding.TextMarshaler)(nil)).Elem()
)

type field struct {
	Name      string `json:"name"`
	Type      string `json:"type"`
	OmitEmpty bool   `json:"omitempty,omitempty"`
	OmitZero  bool   `json:"omitzero,omitempty"`
}

type walker struct {
	structs map[string][]field
}

func typeName(t reflect.Type) string {
	return t.PkgPath() + "." + t.Name()
}

// ref is how a field's type is written in the layout: a scalar kind, a marshaler name,
// "*T", "[]T", "map[]T" (string keys), "struct:<name>" or "opaque:<name>" (another marshaler).
func (w *walker) ref(t reflect.Type) (string, error) {
	if name, ok := marshalers[t]; ok {
		return name, nil
	}
	if t.Kind() != reflect.Pointer && (t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler) ||
		t.Implements(textMarshaler) || reflect.PointerTo(t).Implements(textMarshaler)) {
		// Not reachable through a CRD schema (e.g. managedFields' FieldsV1): the encoder
		// refuses a value of it.
		return "opaque:" + typeName(t), nil
	}
	switch t.Kind() {
	case reflect.String:
		return "string", nil
	case reflect.Bool:
		return "bool", nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "int", nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "uint", nil
	case reflect.Pointer:
		inner, err := w.ref(t.Elem())
		return "*" + inner, err
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "bytes", nil
		}
		inner, err := w.ref(t.Elem())
		return "[]" + inner, err
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return "", fmt.Errorf("%s: map keys other than strings", t)
		}
		inner, err := w.ref(t.Elem())
		return "map[]" + inner, err
	case reflect.Struct:
		name := typeName(t)
		if _, seen := w.structs[name]; !seen {
			w.structs[name] = nil // reserve: recursive types terminate
			fields, err := w.fields(t)
			if err != nil {
				return "", err
			}
			w.structs[name] = fields
		}
		return "struct:" + name, nil
	}
	return "", fmt.Errorf("%s: kind %s is not supported", t, t.Kind())
}

// fields lists a struct's JSON fields in encoding/json's order: declaration order, with the
// fields of embedded structs that have no JSON name of their own in place (",inline" means
// nothing to encoding/json; the embedding does).
func (w *walker) fields(t reflect.Type) ([]field, error) {
	var out []field
	seen := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				return nil, fmt.Errorf("%s.%s: embedded pointer", t, f.Name)
			}
			if ft.Kind() == reflect.Struct {
				inner, err := w.fields(ft)
				if err != nil {
					return nil, err
				}
				for _, g := range inner {
					if seen[g.Name] {
						return nil, fmt.Errorf("%s: field %q twice", t, g.Name)
					}
					seen[g.Name] = true
				}
				out = append(out, inner...)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if strings.Contains(","+opts+",", ",string,") {
			return nil, fmt.Errorf("%s.%s: the string option is not supported", t, f.Name)
		}
		ref, err := w.ref(f.Type)
		if err != nil {
			return nil, err
		}
		if seen[name] {
			return nil, fmt.Errorf("%s: field %q twice", t, name)
		}
		seen[name] = true
		out = append(out, field{
			Name:      name,
			Type:      ref,
			OmitEmpty: strings.Contains(","+opts+",", ",omitempty,"),
			OmitZero:  strings.Contains(","+opts+",", ",omitzero,"),
		})
	}
	return out, nil
}

func layout() error {
	w := &walker{structs: map[string][]field{}}
	root, err := w.ref(reflect.TypeOf(lwsv1.LeaderWorkerTemplate{}))
	if err != nil {
		return err
	}
	names := make([]string, 0, len(w.structs))
	for n := range w.structs {
		names = append(names, n)
	}
	sort.Strings(names)
	structs := make(map[string][]field, len(names))
	for _, n := range names {
		structs[n] = w.structs[n]
	}
	doc := map[string]any{
		"source":  source(),
		"root":    root,
		"structs": structs,
	}
	out, err := json.MarshalIndent(doc, "", " ")
	if err != nil {
		return err
	}
	_, err = fmt.Println(string(out))
	return err
}

// source names the modules the layout was read from, e.g.
// "sigs.k8s.io/lws@v0.9.0, k8s.io/api@v0.36.2, k8s.io/apimachinery@v0.36.2, go1.26.8".
func source() string {
	parts := []string{}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, m := range info.Deps {
			switch m.Path {
			case "sigs.k8s.io/lws", "k8s.io/api", "k8s.io/apimachinery":
				parts = append(parts, m.Path+"@"+m.Version)
			}
		}
	}
	sort.Strings(parts)
	return strings.Join(append(parts, runtime.Version()), ", ")
}
