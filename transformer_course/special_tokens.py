"""The four special tokens and their ids, shared by the models and the data without either importing the other.

Ids 0-3 are always, in this order: pad (fills short sequences; ignored by attention and by the loss), bos (begin
of sequence: the decoder's first input), eos (end of sequence: the model's signal to stop) and unk (any token not
in the vocabulary). The models take the ids as arguments with these defaults; `data.vocab.Vocab` puts the
tokens first in every vocabulary.
"""
__all__ = ["PAD", "BOS", "EOS", "UNK", "SPECIALS", "PAD_ID", "BOS_ID", "EOS_ID", "UNK_ID"]

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
SPECIALS = (PAD, BOS, EOS, UNK)
PAD_ID, BOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3
