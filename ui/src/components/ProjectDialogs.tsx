import { useState, type FormEvent } from 'react';
import { useQuery } from '@tanstack/react-query';
import { api } from '../api/client';
import { messageOf } from '../lib/errors';
import { limitChanges, NO_LIMITS } from '../lib/projectLimits';
import { changed } from '../query/localChanges';
import { browseQuery, discoverQuery } from '../query/queries';
import { ProjectLimitFields, useProjectLimits } from './ProjectLimitFields';
import { Empty, ErrorNote, Field, Modal } from './ui';

interface DialogProps {
  onClose: () => void;
  onCreated: (projectId: string) => void;
}

export function CreateProjectDialog({ onClose, onCreated }: DialogProps) {
  const [name, setName] = useState('');
  const [folder, setFolder] = useState('');
  const [description, setDescription] = useState('');
  const limits = useProjectLimits(NO_LIMITS);
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!limits.check()) return;
    setBusy(true);
    try {
      const p = await api.createProject({
        name,
        folder_path: folder,
        description: description || null,
        ...limitChanges(limits.values, {}),
      });
      changed.project(p, true);
      onCreated(p.id);
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <Modal title="New project" onClose={onClose}>
      <form className="form" onSubmit={submit}>
        <Field label="Name">
          <input value={name} onChange={(e) => setName(e.target.value)} required autoFocus />
        </Field>
        <Field label="Folder" hint="An existing folder, absolute or relative to the project root.">
          <input value={folder} onChange={(e) => setFolder(e.target.value)} required placeholder="code/my-app" />
        </Field>
        <Field label="Description (optional)">
          <input value={description} onChange={(e) => setDescription(e.target.value)} />
        </Field>
        <ProjectLimitFields limits={limits} />
        <ErrorNote error={error} />
        <div className="form-buttons">
          <button type="button" className="button ghost" onClick={onClose}>
            Cancel
          </button>
          <button className="button primary" disabled={busy}>
            Create project
          </button>
        </div>
      </form>
    </Modal>
  );
}

/** Walks `/api/folders/browse`, shows what discovery finds in the folder, imports one. */
export function ImportProjectDialog({ onClose, onCreated }: DialogProps) {
  const [path, setPath] = useState<string | undefined>(undefined);
  const [error, setError] = useState<string>();
  const listing = useQuery({ ...browseQuery(path), placeholderData: (previous) => previous });
  const found = useQuery({ ...discoverQuery(listing.data?.path ?? ''), enabled: listing.data !== undefined });
  const importFolder = async (folder: string) => {
    try {
      const p = await api.importProject({ folder_path: folder });
      changed.project(p, true);
      onCreated(p.id);
    } catch (err) {
      setError(messageOf(err));
    }
  };
  return (
    <Modal title="Import a folder" onClose={onClose} wide>
      <div className="browser">
        <div className="browser-path">
          <button className="button small ghost" disabled={!listing.data?.parent} onClick={() => setPath(listing.data?.parent ?? undefined)}>
            ↑ Up
          </button>
          <code>{listing.data?.path ?? '…'}</code>
          {listing.data && (
            <button className="button small" onClick={() => importFolder(listing.data!.path)}>
              Import this folder
            </button>
          )}
        </div>
        <ErrorNote error={listing.error?.message} what="list this folder" />
        <ErrorNote error={error} what="import" />
        <div className="browser-columns">
          <div>
            <h3>Folders</h3>
            {listing.data && listing.data.entries.length === 0 && <Empty title="No sub-folders here." />}
            <ul className="folder-list">
              {listing.data?.entries
                .filter((e) => !e.hidden)
                .map((e) => (
                  <li key={e.path}>
                    <button className="folder" onClick={() => setPath(e.path)}>
                      <span className="folder-icon">▸</span>
                      {e.name}
                      {e.is_project && <span className="tag">project</span>}
                    </button>
                  </li>
                ))}
            </ul>
          </div>
          <div>
            <h3>Detected projects</h3>
            <ErrorNote error={found.error?.message} what="scan" />
            {found.data && found.data.length === 0 && (
              <Empty title="Nothing detected here.">Folders with .git, .claude/ or CLAUDE.md show up here.</Empty>
            )}
            <ul className="found-list">
              {found.data?.map((d) => (
                <li key={d.folder_path} className="found">
                  <div>
                    <strong>{d.name}</strong> <span className="tag">{d.project_type}</span>
                    {d.has_claude_history && <span className="tag">Claude history</span>}
                    <div className="muted small">{d.markers.join(', ')}</div>
                  </div>
                  {d.project_id ? (
                    <span className="muted small">already a project</span>
                  ) : (
                    <button className="button small primary" onClick={() => importFolder(d.folder_path)}>
                      Import
                    </button>
                  )}
                </li>
              ))}
            </ul>
          </div>
        </div>
      </div>
    </Modal>
  );
}
