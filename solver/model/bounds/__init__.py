"""Proven bounds the LP relaxation cannot see: the floors of one gang tree on PDB violations and
cost (``floors``) and the room bound on the first tier over many workloads (``room``).
"""
