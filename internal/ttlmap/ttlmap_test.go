package ttlmap

import (
	"strconv"
	"testing"
	"time"
)

func TestMap_FreshForTheTTLOnly(t *testing.T) {
	now := time.Unix(1000, 0)
	m := New[string, int](5*time.Second, 10)
	if _, ok := m.Get("a", now); ok {
		t.Fatal("an empty map answered")
	}
	m.Put("a", 1, now)
	if v, ok := m.Get("a", now.Add(5*time.Second-time.Nanosecond)); !ok || v != 1 {
		t.Errorf("just within the TTL: %d, %v; want 1, true", v, ok)
	}
	if _, ok := m.Get("a", now.Add(5*time.Second)); ok {
		t.Error("at the TTL the entry is still trusted")
	}
	if _, ok := m.Get("a", now.Add(-time.Second)); ok {
		t.Error("a clock that went back is trusted")
	}
	m.Put("a", 2, now.Add(time.Minute))
	if v, _ := m.Get("a", now.Add(time.Minute)); v != 2 {
		t.Errorf("after a second Put: %d, want 2", v)
	}
	m.Clear()
	if m.Len() != 0 {
		t.Errorf("after Clear: %d entries", m.Len())
	}
}

// A full map makes room by dropping what has expired, keeping what is fresh; with
// nothing expired it starts again empty. It never holds more than its bound.
func TestMap_Bounded(t *testing.T) {
	now := time.Unix(1000, 0)
	m := New[string, int](time.Minute, 4)
	m.Put("old1", 1, now)
	m.Put("old2", 2, now)
	later := now.Add(2 * time.Minute)
	m.Put("new1", 3, later)
	m.Put("new2", 4, later)
	m.Put("new3", 5, later) // full: the two expired go
	if m.Len() != 3 {
		t.Errorf("%d entries after dropping the expired, want 3", m.Len())
	}
	for _, k := range []string{"new1", "new2", "new3"} {
		if _, ok := m.Get(k, later); !ok {
			t.Errorf("%s was dropped though fresh", k)
		}
	}
	m.Put("new3", 6, later) // a key already there takes no room
	if m.Len() != 3 {
		t.Errorf("replacing a key changed the count to %d", m.Len())
	}
	for i := range 10 {
		m.Put(strconv.Itoa(i), i, later)
		if m.Len() > 4 {
			t.Fatalf("%d entries, more than the bound of 4", m.Len())
		}
	}
	if v, ok := m.Get("9", later); !ok || v != 9 {
		t.Errorf("the newest entry: %d, %v", v, ok)
	}
}
