DROP TABLE processes;
