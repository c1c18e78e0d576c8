package store

import (
	"reflect"
	"testing"
)

// TestWriteSetAppendCoversEveryTable: Append carries every row list of a WriteSet, so a table added
// to WriteSet and not to Append fails here, not as rows a grouped nightly write silently dropped.
func TestWriteSetAppendCoversEveryTable(t *testing.T) {
	var one WriteSet
	v := reflect.ValueOf(&one).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		default:
			t.Fatalf("WriteSet.%s is a %s: teach this test and Append about it", v.Type().Field(i).Name, f.Kind())
		}
	}
	var ws WriteSet
	ws.Append(one)
	ws.Append(one)
	got := reflect.ValueOf(ws)
	for i := range got.NumField() {
		f, name := got.Field(i), got.Type().Field(i).Name
		if f.Kind() == reflect.Slice && f.Len() != 2 {
			t.Errorf("WriteSet.%s: %d rows after appending two write sets of one row each, want 2", name, f.Len())
		}
		if f.Kind() == reflect.Pointer && f.IsNil() {
			t.Errorf("WriteSet.%s: lost by Append", name)
		}
	}
}
