// The package layouts (not the code): what Unity's Package Manager reads from clients/csharp
// (package.json, Runtime/QuantCodec.asmdef, the scripts the asmdef takes, no stray plugin or
// script, a .meta for every asset with its deterministic GUID), and
// QuantCodec.csproj's view of the same sources. Unity and the .NET SDK are not on Debian: these
// tests check the files against the rules those tools apply (run-tests also compiles a Unity
// project's Assets/ against the library, as Unity's Assembly-CSharp would be).
using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Text.RegularExpressions;
using System.Xml;
using QuantCodec;

static partial class Tests
{
    /// <summary>Whether Unity's importer skips a file or folder of a package (and all under such a
    /// folder): hidden (".name"), ending in "~" (Tests~, Bench~, Tools~, build~), a folder "cvs", a
    /// file "*.tmp".</summary>
    static bool UnitySkips(string name, bool isDir)
    {
        if (name.StartsWith(".") || name.EndsWith("~")) return true;
        return isDir ? name.ToLowerInvariant() == "cvs" : name.ToLowerInvariant().EndsWith(".tmp");
    }

    /// <summary>Every file and folder of the package Unity imports, less the .meta files (relative
    /// paths, '/' separated, sorted), and whether each is a folder.</summary>
    static SortedDictionary<string, bool> UnityAssets(string dir, string rel)
    {
        var o = new SortedDictionary<string, bool>(StringComparer.Ordinal);
        foreach (var f in Directory.GetFiles(dir))
        {
            string n = Path.GetFileName(f);
            if (UnitySkips(n, false) || n.EndsWith(".meta")) continue;
            o[rel + n] = false;
        }
        foreach (var d in Directory.GetDirectories(dir))
        {
            string n = Path.GetFileName(d);
            if (UnitySkips(n, true)) continue;
            o[rel + n] = true;
            foreach (var kv in UnityAssets(d, rel + n + "/")) o[kv.Key] = kv.Value;
        }
        return o;
    }

    /// <summary>Every file of the package Unity imports, less the .meta files (relative paths, '/' separated, sorted).</summary>
    static List<string> UnityFiles(string dir, string rel)
    {
        return UnityAssets(dir, rel).Where(kv => !kv.Value).Select(kv => kv.Key).ToList();
    }

    /// <summary>Every .meta file under the package, skipped folders included (relative paths).</summary>
    static List<string> AllMetaFiles(string dir, string rel)
    {
        var o = Directory.GetFiles(dir).Select(Path.GetFileName).Where(n => n.EndsWith(".meta")).Select(n => rel + n).ToList();
        foreach (var d in Directory.GetDirectories(dir))
            o.AddRange(AllMetaFiles(d, rel + Path.GetFileName(d) + "/"));
        o.Sort(StringComparer.Ordinal);
        return o;
    }

    /// <summary>The GUID of an asset of the package (Tools~/unity_meta.py's rule, never to change):
    /// md5("com.quantcodec.client:" + its path relative to the package root), lowercase hex.</summary>
    static string MetaGuid(string rel)
    {
        using (var md5 = System.Security.Cryptography.MD5.Create())
            return string.Concat(md5.ComputeHash(System.Text.Encoding.UTF8.GetBytes("com.quantcodec.client:" + rel)).Select(b => b.ToString("x2")));
    }

    /// <summary>The importer Unity 2021.3 writes into an asset's .meta.</summary>
    static string MetaImporter(string rel, bool isDir)
    {
        if (isDir) return "DefaultImporter";
        string ext = Path.GetExtension(rel).ToLowerInvariant();
        if (ext == ".cs") return "MonoImporter";
        if (ext == ".asmdef") return "AssemblyDefinitionImporter";
        if (rel == "package.json") return "PackageManifestImporter";
        if (new[] { ".txt", ".md", ".json", ".xml", ".html", ".htm", ".bytes", ".csv", ".yaml", ".fnt" }.Contains(ext)) return "TextScriptImporter";
        return "DefaultImporter";
    }

    static string Str(JsonValue o, string key)
    {
        var v = o == null ? null : o.Get(key);
        return v != null && v.Type == JsonType.String ? v.Text : null;
    }

    static void Package()
    {
        // ---- package.json: the manifest Unity's Package Manager reads at the package's root
        JsonValue pkg = null;
        try { pkg = Json.ParseUtf8(File.ReadAllBytes(Path.Combine(here, "package.json"))); }
        catch (Exception e) { Check(false, "package.json is not strict JSON: " + e.Message); return; }
        Check(pkg.Type == JsonType.Object, "package.json is an object");
        var keys = pkg.Members.Select(m => m.Key).ToList();
        Check(keys.Distinct().Count() == keys.Count, "package.json has no duplicate key");
        string name = Str(pkg, "name");
        // Unity's naming rules: reverse domain, starts with com., lowercase letters, digits, - _ .,
        // at most 50 characters to show in the Editor (214 at all)
        Check(name != null && Regex.IsMatch(name, @"^com\.[a-z0-9_-]+(\.[a-z0-9_-]+)+$") && name.Length <= 50,
            "package.json name follows Unity's naming rules: " + name);
        string version = Str(pkg, "version");
        Check(version != null && Regex.IsMatch(version,
                @"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$"),
            "package.json version is SemVer: " + version);
        string unity = Str(pkg, "unity");
        Check(unity != null && Regex.IsMatch(unity, @"^[0-9]{4}\.[0-9]+$"), "package.json unity is <year>.<minor>: " + unity);
        var ur = pkg.Get("unityRelease");
        Check(ur == null || (ur.Type == JsonType.String && Regex.IsMatch(ur.Text, @"^[0-9]+[abfp][0-9]+$")), "unityRelease, if any, is like 0f1");
        Check(!string.IsNullOrEmpty(Str(pkg, "displayName")), "package.json has a displayName");
        Check(!string.IsNullOrEmpty(Str(pkg, "description")), "package.json has a description");
        var deps = pkg.Get("dependencies");
        Check(deps == null || (deps.Type == JsonType.Object && deps.Members.All(m => m.Value.Type == JsonType.String)),
            "dependencies, if any, map names to version strings");
        // the same version everywhere: the Python package (the wire format's reference), the csproj
        var init = File.ReadAllText(Path.Combine(root, "quantcodec", "__init__.py"));
        var pv = Regex.Match(init, "__version__ = \"([^\"]+)\"");
        Check(pv.Success && pv.Groups[1].Value == version, "package.json version " + version + " is quantcodec.__version__ " + pv.Groups[1].Value);

        // ---- what Unity imports from the package folder
        var files = UnityFiles(here, "");
        // exactly one assembly definition, Runtime/'s, and no assembly reference file
        var asmdefs = files.Where(f => f.EndsWith(".asmdef") || f.EndsWith(".asmref")).ToList();
        Check(asmdefs.Count == 1 && asmdefs[0] == "Runtime/QuantCodec.asmdef",
            "one assembly definition, Runtime/QuantCodec.asmdef: " + string.Join(", ", asmdefs));
        // no native or managed plugin Unity would import beside the asmdef's assembly (a built
        // QuantCodec.dll in the folder would be a second assembly of the same name): builds go to build~/
        var plugins = files.Where(f => Regex.IsMatch(f, @"\.(dll|exe|so|dylib|a|bundle|jar|aar|pdb|mdb)$", RegexOptions.IgnoreCase)).ToList();
        Check(plugins.Count == 0, "no plugin file Unity would import: " + string.Join(", ", plugins));
        // ---- the .meta files: committed, since a package added by git URL is immutable and Unity
        // ignores an asset without one there ("has no meta file, but it's in an immutable folder")
        var assets = UnityAssets(here, "");
        var metaFiles = AllMetaFiles(here, "");
        var missing = new List<string>();
        var wrongGuid = new List<string>();
        var wrongImporter = new List<string>();
        foreach (var kv in assets)
        {
            string mp = Path.Combine(here, kv.Key + ".meta");
            if (!File.Exists(mp)) { missing.Add(kv.Key); continue; }
            var lines = File.ReadAllText(mp).Split('\n');
            if (lines.Length < 4 || lines[0] != "fileFormatVersion: 2" || lines[1] != "guid: " + MetaGuid(kv.Key))
                wrongGuid.Add(kv.Key + ".meta");
            // a folder: "folderAsset: yes" then DefaultImporter; a file: its importer, right after the guid
            string imp = kv.Value ? (lines.Length > 3 && lines[2] == "folderAsset: yes" ? lines[3] : "?") : (lines.Length > 2 ? lines[2] : "?");
            if (imp != MetaImporter(kv.Key, kv.Value) + ":") wrongImporter.Add(kv.Key + ".meta (" + imp + ")");
        }
        Check(assets.Count > 0 && missing.Count == 0, "every file and folder Unity imports has its .meta (" + assets.Count + "); missing: " + string.Join(", ", missing));
        Check(wrongGuid.Count == 0, "every .meta has fileFormatVersion 2 and its path's GUID (Tools~/unity_meta.py): " + string.Join(", ", wrongGuid));
        Check(wrongImporter.Count == 0, "every .meta names the importer of its kind: " + string.Join(", ", wrongImporter));
        Func<string, bool> inSkipped = m => { var parts = m.Split('/'); return parts.Take(parts.Length - 1).Any(p => UnitySkips(p, true)); };
        var hiddenMetas = metaFiles.Where(inSkipped).ToList();
        Check(hiddenMetas.Count == 0, "no .meta in a folder Unity skips (Tests~, Bench~, Tools~, build~, hidden): " + string.Join(", ", hiddenMetas));
        var orphans = metaFiles.Where(m => !inSkipped(m) && !assets.ContainsKey(m.Substring(0, m.Length - ".meta".Length))).ToList();
        Check(orphans.Count == 0, "no .meta without its asset: " + string.Join(", ", orphans));
        var guids = metaFiles.Select(m => File.ReadAllLines(Path.Combine(here, m)).Where(l => l.StartsWith("guid: ")).Select(l => l.Substring(6).Trim()).FirstOrDefault() ?? "")
            .ToList();
        Check(guids.All(g => Regex.IsMatch(g, "^[0-9a-f]{32}$")), "every .meta has a GUID of 32 lowercase hex digits");
        var dupes = guids.GroupBy(g => g).Where(g => g.Count() > 1).Select(g => g.Key).ToList();
        Check(dupes.Count == 0, "the GUIDs are unique: " + string.Join(", ", dupes));

        // ---- Runtime/QuantCodec.asmdef
        JsonValue asm = null;
        try { asm = Json.ParseUtf8(File.ReadAllBytes(Path.Combine(here, "Runtime", "QuantCodec.asmdef"))); }
        catch (Exception e) { Check(false, "Runtime/QuantCodec.asmdef is not strict JSON: " + e.Message); return; }
        Check(Str(asm, "name") == "QuantCodec", "the asmdef names the assembly QuantCodec (as the file, the DLL and the namespace)");
        Check(Str(asm, "rootNamespace") == "QuantCodec", "the asmdef's rootNamespace is QuantCodec");
        var ner = asm.Get("noEngineReferences");
        Check(ner != null && ner.Type == JsonType.Bool && ner.BoolValue, "noEngineReferences: true (the library needs no UnityEngine)");
        var ar = asm.Get("autoReferenced");
        Check(ar == null || (ar.Type == JsonType.Bool && ar.BoolValue), "autoReferenced (Assembly-CSharp sees it without a reference)");
        var refs = asm.Get("references");
        Check(refs == null || (refs.Type == JsonType.Array && refs.Items.Count == 0), "the asmdef references no other assembly");
        var unsafeCode = asm.Get("allowUnsafeCode");
        Check(unsafeCode == null || (unsafeCode.Type == JsonType.Bool && !unsafeCode.BoolValue), "no unsafe code");
        foreach (var k in new[] { "includePlatforms", "excludePlatforms", "defineConstraints", "precompiledReferences" })
        {
            var v = asm.Get(k);
            Check(v == null || (v.Type == JsonType.Array && v.Items.Count == 0), "the asmdef's " + k + " is empty (every platform, no condition)");
        }

        // ---- the scripts: those Unity compiles into the asmdef's assembly are those build.sh compiled
        var unityCs = files.Where(f => f.StartsWith("Runtime/") && f.EndsWith(".cs")).ToList();
        var built = File.ReadAllLines(Path.Combine(here, "build~", "QuantCodec.sources"))
            .Where(l => l.Length > 0)
            .Select(l => l.Substring(here.TrimEnd('/').Length + 1).Replace('\\', '/')).ToList();
        built.Sort(StringComparer.Ordinal);
        Check(unityCs.Count > 0 && unityCs.SequenceEqual(built),
            "build.sh compiles exactly the scripts Unity puts in the asmdef's assembly (" + unityCs.Count + " under Runtime/, "
            + built.Count + " built)");
        foreach (var f in unityCs)
        {
            string text = File.ReadAllText(Path.Combine(here, f));
            Check(Regex.IsMatch(text, @"(?m)^namespace QuantCodec(\.|\s|$)"), f + " is in the QuantCodec namespace");
            Check(!Regex.IsMatch(text, @"(?m)^\s*using\s+UnityEngine"), f + " uses no UnityEngine (noEngineReferences)");
        }
        // every script Unity sees is the asmdef's: none outside Runtime/ (a script outside every
        // assembly definition logs "will not be compiled because it exists outside the Assets folder
        // and does not belong to any assembly definition file" in every project using the package);
        // the tests', the bench's and the runner's live in Tests~/, Bench~/, Tools~/, which Unity skips
        var others = files.Where(f => f.EndsWith(".cs") && !f.StartsWith("Runtime/")).ToList();
        Check(others.Count == 0, "no script outside Runtime/ where Unity looks: " + string.Join(", ", others));
        foreach (var d in new[] { "Tests~", "Bench~", "Tools~" })
            Check(Directory.Exists(Path.Combine(here, d)) && UnitySkips(d, true), d + "/ is there, and Unity skips it");

        // ---- QuantCodec.csproj (SDK-style): the same sources, both targets, the same version
        var doc = new XmlDocument();
        doc.Load(Path.Combine(here, "QuantCodec.csproj"));
        var proj = doc.DocumentElement;
        Check(proj.Name == "Project" && proj.GetAttribute("Sdk") == "Microsoft.NET.Sdk", "QuantCodec.csproj is an SDK-style project");
        Func<string, string> prop = n => { var e = proj.SelectSingleNode("PropertyGroup/" + n); return e == null ? null : e.InnerText.Trim(); };
        Check(prop("TargetFrameworks") == "netstandard2.0;netstandard2.1", "the csproj targets netstandard2.0 and netstandard2.1");
        Check(prop("AssemblyName") == "QuantCodec" && prop("RootNamespace") == "QuantCodec", "the csproj builds the QuantCodec assembly");
        Check(prop("Version") == version, "the csproj's version is package.json's");
        Check(prop("EnableDefaultItems") == "false", "the csproj globs only what it names (not Tests~/, Bench~/, Tools~/)");
        var compile = proj.SelectNodes("ItemGroup/Compile").Cast<XmlElement>().ToList();
        Check(compile.Count == 1 && compile[0].GetAttribute("Include") == "Runtime/**/*.cs"
              && compile[0].GetAttribute("Exclude") == "Runtime/**/.*/**;Runtime/**/*~/**",
            "the csproj compiles Runtime/**/*.cs less the folders Unity skips");
        string props = File.ReadAllText(Path.Combine(here, "Directory.Build.props"));
        Check(props.Contains("build~/dotnet/obj/") && props.Contains("build~/dotnet/bin/"),
            "dotnet's bin/ and obj/ go under build~/ (which Unity skips)");
    }
}
