"""Readers and writers of data formats other systems publish: tensor2tensor's WikiSum files, and
the datasets researchers train on."""
