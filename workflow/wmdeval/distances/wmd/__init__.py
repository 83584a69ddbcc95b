"""Exact Word Mover's Distance matrices, solved in stored blocks (docs/protocol.md §5 and §7).

- :mod:`.solver`: documents prepared for WMD, cost matrices, one exact solve (POT's
  network simplex), and solving a block of pairs with threads;
- :mod:`.pairs`: pair numbering, the solve order, the work model and the block plan
  (numpy and pyarrow only: the scheduler's resource model uses it at planning time);
- :mod:`.blocks`: block files: solving one into a file, gathering them into a matrix,
  taking a variant's sub-matrix.

Nothing is imported here, so that importing :mod:`.pairs` does not load POT.
"""
