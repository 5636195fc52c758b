"""ember.rec: jagged tensors, embedding-bag collections, sharding, DLRM-family models."""
