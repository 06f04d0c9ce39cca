"""Data: the datasets, image files, corpora and tokenizers, and how batches are drawn."""
