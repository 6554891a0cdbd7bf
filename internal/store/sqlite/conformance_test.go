package sqlite

import (
	"testing"

	"sortie/internal/store"
	"sortie/internal/store/storetest"
)

func TestStoreContract(t *testing.T) {
	storetest.Test(t, func(t *testing.T) store.Store {
		s, _ := openTemp(t)
		return s
	})
}
