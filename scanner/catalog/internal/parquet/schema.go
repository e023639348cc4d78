package parquet

import (
	"errors"
	"fmt"
)

// Schema flattening: the tree of schema elements to leaf columns.

// pqLeaf is a leaf column of the schema.
type pqLeaf struct {
	elem     pqSchemaElem
	top      string // name of the top-level field it belongs to
	nested   bool   // inside a group, or repeated
	optional bool
}

// leaves flattens the schema tree into its leaf columns, in column order.
func leaves(schema []pqSchemaElem) ([]pqLeaf, error) {
	if len(schema) == 0 {
		return nil, errors.New("empty schema")
	}
	var out []pqLeaf
	var walk func(i, depth int, top string, nested bool) (int, error)
	walk = func(i, depth int, top string, nested bool) (int, error) {
		if i >= len(schema) {
			return 0, errors.New("schema: fewer elements than its groups' num_children")
		}
		if depth > maxSchemaDepth {
			return 0, fmt.Errorf("schema nested deeper than %d", maxSchemaDepth)
		}
		e := schema[i]
		if depth == 1 {
			top = e.name
		}
		if depth > 0 && e.repetition == repRepeated {
			nested = true
		}
		if e.numChildren < 0 || int64(e.numChildren) > int64(len(schema)-i-1) {
			return 0, fmt.Errorf("schema element %q: %d children", e.name, e.numChildren)
		}
		if e.numChildren == 0 && depth > 0 {
			if e.typ < ptBoolean || e.typ > ptFixed {
				return 0, fmt.Errorf("column %q: physical type %d", e.name, e.typ)
			}
			out = append(out, pqLeaf{elem: e, top: top, nested: nested || depth > 1, optional: e.repetition == repOptional})
			return i + 1, nil
		}
		next := i + 1
		for k := int32(0); k < e.numChildren; k++ {
			var err error
			if next, err = walk(next, depth+1, top, nested); err != nil {
				return 0, err
			}
		}
		return next, nil
	}
	end, err := walk(0, 0, "", false)
	if err != nil {
		return nil, err
	}
	if end != len(schema) {
		return nil, fmt.Errorf("schema: %d elements, its root has %d", len(schema), end)
	}
	return out, nil
}
