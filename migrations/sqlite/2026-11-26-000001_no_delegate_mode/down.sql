-- Nothing to undo: `delegate` was never a mode a CLI accepted.
SELECT 1;
