package migration

import (
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
)

func TestLoad_NumberedWithoutGaps(t *testing.T) {
	f := &fstest.MapFile{Data: []byte(`SELECT 1;`)}
	tests := []struct {
		name    string
		files   fstest.MapFS
		want    []Migration
		wantErr string
	}{
		{"two in order", fstest.MapFS{"migrations/002_b.sql": f, "migrations/001_a.sql": f},
			[]Migration{{1, "a", "SELECT 1;"}, {2, "b", "SELECT 1;"}}, ""},
		{"gap", fstest.MapFS{"migrations/001_a.sql": f, "migrations/003_c.sql": f}, nil, "want version 002"},
		{"does not start at 001", fstest.MapFS{"migrations/002_b.sql": f}, nil, "want version 001"},
		{"bad name", fstest.MapFS{"migrations/1_a.sql": f}, nil, "NNN_name.sql"},
		{"none", fstest.MapFS{}, nil, "no migrations"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := Load(tt.files)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Load = %v, want error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(ms, tt.want) {
				t.Fatalf("Load = %+v, %v; want %+v", ms, err, tt.want)
			}
		})
	}
}
